//! RuntimeConfig images built through the engine: setup commands, a real unprivileged user, reuse while unchanged, and pip into the user's virtualenv.

use burrow_backend::{Backend, FileContext, Sandbox, VPath};
use burrow_docker::{DockerSandbox, dockerfile, runtime_image};
use burrow_types::RuntimeConfig;

use super::support::{self, IMAGE, PYTHON_IMAGE, Removal};

fn cx() -> FileContext {
    FileContext::default()
}

/// A busybox runtime with setup commands, an env var, a work dir of its own and uid 4321.
fn busybox_runtime() -> RuntimeConfig {
    let mut config = RuntimeConfig::new("burrow test busybox runtime");
    config.base_image = Some(IMAGE.to_owned());
    config.setup_commands = vec![
        "mkdir -p /opt/tools && printf '#!/bin/sh\\necho \"tool ran: $*\"\\n' > /opt/tools/hello && chmod 755 /opt/tools/hello".into(),
        "echo \"built with 'quotes' and \\\"more\\\"\" > /etc/burrow-note".into(),
    ];
    config.env_vars.insert(
        "PATH".into(),
        "/opt/tools:/usr/sbin:/usr/bin:/sbin:/bin".into(),
    );
    config
        .env_vars
        .insert("BURROW_TEST".into(), "value with spaces".into());
    config.work_dir = "/srv/agent".into();
    config.run_as_uid = Some(4321);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_is_built_once_and_runs_as_its_user() {
    let docker = support::docker().await;
    assert!(
        support::has_image(&docker, IMAGE).await,
        "run `cargo xtask setup` to import {IMAGE}"
    );
    let config = busybox_runtime();
    let tag = dockerfile(&config).unwrap().tag;
    // Start from no image, so the first call really builds.
    let _ = docker
        .remove_image(
            &tag,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
    let first = runtime_image(&docker, &config).await.unwrap();
    assert!(first.built, "the first call builds");
    assert_eq!(first.image, tag);
    let second = runtime_image(&docker, &config).await.unwrap();
    assert!(!second.built, "an unchanged config reuses the image");
    let image_id = |tag: String| {
        let docker = docker.clone();
        async move { docker.inspect_image(&tag).await.unwrap().id }
    };
    let before = image_id(tag.clone()).await;
    assert_eq!(runtime_image(&docker, &config).await.unwrap().image, tag);
    assert_eq!(
        image_id(tag.clone()).await,
        before,
        "reuse keeps the very same image"
    );

    let options = support::options("runtime-busybox");
    let sandbox = DockerSandbox::from_runtime_on(docker.clone(), &config, options)
        .await
        .unwrap();
    let _removal = Removal(sandbox.id().to_owned());
    assert_eq!(sandbox.work_dir(), "/srv/agent");
    let r = sandbox
        .execute(&cx(), "id -u; id -g; whoami; pwd; echo \"$HOME\"; cat /etc/burrow-note; hello a b; echo \"$BURROW_TEST\"", None)
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{:?}", r.output);
    let lines: Vec<&str> = r.output.lines().collect();
    assert_eq!(
        lines,
        [
            "4321",
            "4321",
            "burrow",
            "/srv/agent",
            "/home/burrow",
            "built with 'quotes' and \"more\"",
            "tool ran: a b",
            "value with spaces"
        ]
    );
    // The user owns its home and the work dir; files written through the archive API are theirs.
    sandbox
        .write(&cx(), &VPath::parse("/deep/er/file.txt").unwrap(), "mine\n")
        .await
        .unwrap();
    let r = sandbox
        .execute(
            &cx(),
            "touch \"$HOME/ok\" made-here && stat -c '%u %n' . deep deep/er deep/er/file.txt",
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        r.output, "4321 .\n4321 deep\n4321 deep/er\n4321 deep/er/file.txt\n",
        "{:?}",
        r.output
    );
    let r = sandbox
        .execute(&cx(), "touch /etc/nope", None)
        .await
        .unwrap();
    assert_ne!(
        r.exit_code,
        Some(0),
        "the unprivileged user may not write /etc"
    );
    sandbox.close().await.unwrap();

    // cache_image off: built again, without the layer cache.
    let mut fresh = config.clone();
    fresh.cache_image = false;
    assert!(runtime_image(&docker, &fresh).await.unwrap().built);
}

/// The test that needs the python3 test image (`burrow_testkit::Part::DockerPython`).
mod docker_python {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pip_installs_into_the_users_virtualenv() {
        burrow_testkit::require(burrow_testkit::Part::DockerPython);
        let docker = support::docker().await;
        assert!(
            support::has_image(&docker, PYTHON_IMAGE).await,
            "{PYTHON_IMAGE} is missing: `cargo xtask setup` builds it with debootstrap"
        );
        let mut config = RuntimeConfig::new("burrow test python runtime");
        config.base_image = Some(PYTHON_IMAGE.to_owned());
        config.run_as_uid = Some(1000);
        let sandbox =
            DockerSandbox::from_runtime_on(docker, &config, support::options("runtime-python"))
                .await
                .unwrap();
        let _removal = Removal(sandbox.id().to_owned());
        // A tiny package, written through the file API and installed offline.
        sandbox
        .write(
            &cx(),
            &VPath::parse("/pkg/setup.py").unwrap(),
            "from setuptools import setup\nsetup(name='burrowpkg', version='1.0', py_modules=['burrowpkg'], entry_points={'console_scripts': ['burrow-hello=burrowpkg:main']})\n",
        )
        .await
        .unwrap();
        sandbox
        .write(
            &cx(),
            &VPath::parse("/pkg/burrowpkg.py").unwrap(),
            "VALUE = 'installed by an unprivileged user'\ndef main():\n    print('console script on PATH')\n",
        )
        .await
        .unwrap();
        let r = sandbox
        .execute(
            &cx(),
            "id -u && command -v python && command -v pip && { pip install --no-index --no-build-isolation ./pkg > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }; } && python -c 'import burrowpkg; print(burrowpkg.VALUE)' && burrow-hello",
            Some(std::time::Duration::from_secs(300)),
        )
        .await
        .unwrap();
        assert_eq!(r.exit_code, Some(0), "{}", r.output);
        let lines: Vec<&str> = r.output.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(
            lines,
            [
                "1000",
                "/opt/venv/bin/python",
                "/opt/venv/bin/pip",
                "installed by an unprivileged user",
                "console script on PATH"
            ],
            "{}",
            r.output
        );
        sandbox.close().await.unwrap();
    }
}
