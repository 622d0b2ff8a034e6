//! Shared test helpers: the engine, the locally built test images, sandboxes that are always removed.

use std::time::Duration;

use burrow_docker::{Docker, DockerOptions, DockerSandbox};

/// The busybox image `cargo xtask setup` imports (Debian's busybox-static, no registry needed).
pub const IMAGE: &str = "burrow-test-busybox:latest";
/// A Debian image with python3 and venv, built by `cargo xtask setup` (debootstrap).
pub const PYTHON_IMAGE: &str = "burrow-test-python:latest";
/// A label every container these tests start carries (with a per-test value where counted).
pub const TEST_LABEL: &str = "burrow.test";

/// An engine connection; fails the test, naming the part, when setup found no engine
/// (`burrow_testkit::Part::Docker`), and says what went wrong when it cannot connect.
pub async fn docker() -> Docker {
    burrow_testkit::require(burrow_testkit::Part::Docker);
    burrow_docker::connect(&DockerOptions::default())
        .await
        .unwrap_or_else(|e| panic!("these tests need a Docker engine: {e}"))
}

/// True when `image` exists locally.
pub async fn has_image(docker: &Docker, image: &str) -> bool {
    burrow_docker::image_exists(docker, image).await.unwrap()
}

/// Options for a test sandbox: labelled, otherwise the defaults.
pub fn options(test: &str) -> DockerOptions {
    DockerOptions::default().with_label(TEST_LABEL, test)
}

/// A fresh sandbox from the busybox image; panics (naming the setup step) when the image is missing.
pub async fn sandbox(test: &str) -> DockerSandbox {
    sandbox_with(options(test)).await
}

/// A fresh sandbox from the busybox image with `options`.
pub async fn sandbox_with(options: DockerOptions) -> DockerSandbox {
    let docker = docker().await;
    assert!(
        has_image(&docker, IMAGE).await,
        "the test image {IMAGE} is missing: run `cargo xtask setup` (it imports Debian's busybox-static)"
    );
    DockerSandbox::start_on(docker, IMAGE, options)
        .await
        .unwrap()
}

/// Removes container `id` when dropped, waiting for the engine, even while no runtime is running.
#[derive(Debug)]
pub struct Removal(pub String);

impl Drop for Removal {
    fn drop(&mut self) {
        let id = std::mem::take(&mut self.0);
        let worker = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let docker = docker().await;
                let options = bollard::query_parameters::RemoveContainerOptionsBuilder::default()
                    .force(true)
                    .v(true)
                    .build();
                let _ = tokio::time::timeout(
                    Duration::from_secs(60),
                    docker.remove_container(&id, Some(options)),
                )
                .await;
            });
        });
        let _ = worker.join();
    }
}

/// Runs `argv` in the sandbox's container as root through the docker API (for test setup only).
pub async fn exec_argv(sandbox: &DockerSandbox, argv: &[&str]) -> (i64, String) {
    use bollard::exec::{CreateExecOptions, StartExecResults};
    use futures::StreamExt;
    let docker = sandbox.docker();
    let created = docker
        .create_exec(
            sandbox.id(),
            CreateExecOptions {
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(argv.iter().map(|s| s.to_string()).collect()),
                user: Some("0:0".to_owned()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut out = Vec::new();
    if let StartExecResults::Attached { mut output, .. } =
        docker.start_exec(&created.id, None).await.unwrap()
    {
        while let Some(frame) = output.next().await {
            out.extend_from_slice(&frame.unwrap().into_bytes());
        }
    }
    let code = docker
        .inspect_exec(&created.id)
        .await
        .unwrap()
        .exit_code
        .unwrap_or(-1);
    (code, String::from_utf8_lossy(&out).into_owned())
}
