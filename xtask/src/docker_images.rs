//! Setup steps that build the Docker test images burrow-docker's tests run, with no registry.
//!
//! No image is ever pulled: each is a root file system made on this machine from
//! Debian packages and turned into an image with `docker import`. Each step does
//! nothing when its image exists (so it runs once per machine), and prints a note
//! without failing when there is no Docker engine (the docker tests then fail with a
//! message that names this step).

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::cmd::Cmd;
use crate::setup::Setup;

/// A busybox-only image: `sh` and the usual tools, 2 MB, imported in a second.
pub const BUSYBOX_IMAGE: &str = "burrow-test-busybox:latest";
/// Debian bookworm (minbase) with python3 and venv, for the run_as_uid/pip tests.
pub const PYTHON_IMAGE: &str = "burrow-test-python:latest";
/// The Debian mirror debootstrap fetches from.
const MIRROR: &str = "http://deb.debian.org/debian";

/// `burrow-test-busybox`: Debian's static busybox with its applet links, /tmp and a passwd file.
pub fn busybox_image(setup: &mut Setup) -> anyhow::Result<()> {
    let root = setup.root().to_path_buf();
    if !engine_ready(&root) {
        return Ok(());
    }
    if image_exists(&root, BUSYBOX_IMAGE) {
        println!("  {BUSYBOX_IMAGE} exists");
        setup.export("BURROW_DOCKER_TEST_IMAGE", BUSYBOX_IMAGE);
        return Ok(());
    }
    apt_install(&root, "busybox-static")?;
    let dir = tempdir("burrow-busybox-rootfs")?;
    let rootfs = dir.as_path();
    for d in [
        "bin", "sbin", "usr/bin", "usr/sbin", "etc", "root", "home", "tmp",
    ] {
        fs::create_dir_all(rootfs.join(d))?;
    }
    fs::set_permissions(rootfs.join("tmp"), fs::Permissions::from_mode(0o1777))?;
    fs::copy("/bin/busybox", rootfs.join("bin/busybox"))?;
    let list = Command::new("/bin/busybox")
        .arg("--list-full")
        .output()
        .context("running busybox --list-full")?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let link = rootfs.join(applet.trim_start_matches('/'));
        if applet.is_empty() || link.exists() {
            continue;
        }
        symlink("/bin/busybox", &link).with_context(|| format!("linking {applet}"))?;
    }
    fs::write(
        rootfs.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    )?;
    fs::write(rootfs.join("etc/group"), "root:x:0:\nnogroup:x:65534:\n")?;
    let imported = import(&root, rootfs, BUSYBOX_IMAGE);
    let _ = fs::remove_dir_all(rootfs);
    imported?;
    setup.export("BURROW_DOCKER_TEST_IMAGE", BUSYBOX_IMAGE);
    Ok(())
}

/// `burrow-test-python`: `debootstrap --variant=minbase --include=python3-venv bookworm`
/// (about two minutes, once per machine).
pub fn python_image(setup: &mut Setup) -> anyhow::Result<()> {
    let root = setup.root().to_path_buf();
    if !engine_ready(&root) {
        return Ok(());
    }
    if image_exists(&root, PYTHON_IMAGE) {
        println!("  {PYTHON_IMAGE} exists");
        setup.export("BURROW_DOCKER_PYTHON_IMAGE", PYTHON_IMAGE);
        return Ok(());
    }
    apt_install(&root, "debootstrap")?;
    let dir = tempdir("burrow-python-rootfs")?;
    let rootfs = dir.to_string_lossy().into_owned();
    println!("  building {PYTHON_IMAGE} with debootstrap (takes a few minutes, once)");
    let built = Cmd::new(
        &root,
        "debootstrap",
        &[
            "--variant=minbase",
            "--include=python3-venv",
            "bookworm",
            &rootfs,
            MIRROR,
        ],
    )
    .run()
    .and_then(|()| {
        for junk in [
            "var/cache/apt/archives",
            "var/lib/apt/lists",
            "usr/share/doc",
            "usr/share/man",
        ] {
            let path = dir.join(junk);
            if path.exists() {
                fs::remove_dir_all(&path)?;
                fs::create_dir_all(&path)?;
            }
        }
        import(&root, &dir, PYTHON_IMAGE)
    });
    let _ = fs::remove_dir_all(&dir);
    built?;
    setup.export("BURROW_DOCKER_PYTHON_IMAGE", PYTHON_IMAGE);
    Ok(())
}

/// True when the docker CLI reaches an engine; otherwise prints why the step does nothing.
fn engine_ready(root: &Path) -> bool {
    if Cmd::new(
        root,
        "docker",
        &["version", "--format", "{{.Server.Version}}"],
    )
    .succeeds_quietly()
    {
        return true;
    }
    println!(
        "  note: no Docker engine reachable (docker version failed): skipping; the burrow-docker tests need one"
    );
    false
}

fn image_exists(root: &Path, image: &str) -> bool {
    Cmd::new(root, "docker", &["image", "inspect", image]).succeeds_quietly()
}

/// Installs the Debian package `package` unless dpkg says it is installed.
pub fn apt_install(root: &Path, package: &str) -> anyhow::Result<()> {
    let installed = || {
        Cmd::new(root, "dpkg-query", &["-W", "-f=${Status}", package])
            .output_quietly()
            .is_some_and(|s| s.contains("install ok installed"))
    };
    if installed() {
        return Ok(());
    }
    println!("  installing {package} with apt-get");
    let quiet = vec![("DEBIAN_FRONTEND".to_string(), "noninteractive".to_string())];
    Cmd::new(root, "apt-get", &["update", "-qq"])
        .envs(&quiet)
        .run()?;
    Cmd::new(root, "apt-get", &["install", "-y", "-qq", package])
        .envs(&quiet)
        .run()?;
    if !installed() {
        bail!("apt-get install {package} succeeded but dpkg does not list it");
    }
    Ok(())
}

/// A fresh empty directory under the system temp dir.
fn tempdir(name: &str) -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `tar -C rootfs -c . | docker import - image`.
fn import(root: &Path, rootfs: &Path, image: &str) -> anyhow::Result<()> {
    println!(
        "$ tar -C {} -c . | docker import - {image}",
        rootfs.display()
    );
    let mut tar = Command::new("tar")
        .args(["--numeric-owner", "-C"])
        .arg(rootfs)
        .args(["-c", "."])
        .current_dir(root)
        .stdout(Stdio::piped())
        .spawn()
        .context("could not start tar")?;
    let stdout = tar.stdout.take().context("tar has no stdout")?;
    let status = Command::new("docker")
        .args(["import", "-", image])
        .stdin(stdout)
        .stdout(Stdio::null())
        .status()
        .context("could not start docker import")?;
    let tar_status = tar.wait()?;
    if !tar_status.success() || !status.success() {
        bail!("importing {image} failed (tar: {tar_status}, docker import: {status})");
    }
    Ok(())
}
