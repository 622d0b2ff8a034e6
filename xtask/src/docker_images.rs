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

/// The repositories of the runtime images burrow-docker's tests build
/// (`RuntimeConfig::new("burrow test ...")` tags `burrow-runtime-burrow-test-NAME:HASH`).
const TEST_RUNTIME_IMAGES: &str = "burrow-runtime-burrow-test-*";

/// Removes what earlier test runs left, so the machine does not fill up run after run:
/// of the test runtime images, all but the newest of each repository (a changed
/// Dockerfile has a new hash, so the old tag would stay forever), and the untagged
/// images built on the two test images (an image rebuilt under its tag leaves the old
/// one untagged). An image a container still uses is left (no force).
pub fn prune_leftovers(setup: &mut Setup) -> anyhow::Result<()> {
    let root = setup.root().to_path_buf();
    if !engine_ready(&root) {
        return Ok(());
    }
    let reference = format!("reference={TEST_RUNTIME_IMAGES}");
    let tagged = Cmd::new(
        &root,
        "docker",
        &[
            "image",
            "ls",
            "--filter",
            &reference,
            "--format",
            "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}",
        ],
    )
    .output_quietly()
    .context("docker image ls failed")?;
    let mut doomed = outdated_tags(&tagged);
    let bases: Vec<String> = [BUSYBOX_IMAGE, PYTHON_IMAGE]
        .iter()
        .filter_map(|image| {
            Cmd::new(
                &root,
                "docker",
                &["image", "inspect", "-f", "{{.Id}}", image],
            )
            .output_quietly()
            .map(|id| short_id(id.trim()).to_string())
        })
        .collect();
    let dangling = Cmd::new(
        &root,
        "docker",
        &[
            "image",
            "ls",
            "-q",
            "--no-trunc",
            "--filter",
            "dangling=true",
        ],
    )
    .output_quietly()
    .unwrap_or_default();
    for id in dangling.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let history = Cmd::new(&root, "docker", &["history", "-q", id])
            .output_quietly()
            .unwrap_or_default();
        if built_on(&history, &bases) {
            doomed.push(id.to_string());
        }
    }
    if doomed.is_empty() {
        println!("  nothing to remove");
        return Ok(());
    }
    for image in &doomed {
        // A tag as it is, an untagged image by its short id.
        let shown = if image.starts_with("sha256:") {
            short_id(image)
        } else {
            image.as_str()
        };
        if Cmd::new(&root, "docker", &["image", "rm", image]).succeeds_quietly() {
            println!("  removed {shown}");
        } else {
            println!("  kept {shown} (a container still uses it)");
        }
    }
    Ok(())
}

/// From `REPOSITORY:TAG\tCREATED` lines, the tags that are not the newest of their
/// repository.
pub fn outdated_tags(listing: &str) -> Vec<String> {
    let mut rows: Vec<(&str, &str, &str)> = listing
        .lines()
        .filter_map(|line| {
            let (image, created) = line.split_once('\t')?;
            let (repository, _) = image.rsplit_once(':')?;
            Some((repository, created.trim(), image))
        })
        .collect();
    // Newest first within each repository (docker's CreatedAt sorts as text).
    rows.sort_by(|a, b| a.0.cmp(b.0).then(b.1.cmp(a.1)));
    let mut out = Vec::new();
    let mut last = None;
    for (repository, _, image) in rows {
        if last == Some(repository) {
            out.push(image.to_string());
        }
        last = Some(repository);
    }
    out
}

/// True when `docker history -q`'s output names one of `bases` (short ids).
pub fn built_on(history: &str, bases: &[String]) -> bool {
    history
        .lines()
        .map(|l| short_id(l.trim()))
        .any(|id| bases.iter().any(|b| b == id))
}

/// The 12 hex digits docker shows of an image id (`sha256:` dropped).
fn short_id(id: &str) -> &str {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    id.get(..12).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::{built_on, outdated_tags};

    #[test]
    fn all_but_the_newest_tag_of_each_test_image_go() {
        let listing = "burrow-runtime-burrow-test-busybox-runtime:aaa\t2026-12-01 21:00:00 +0000 UTC\n\
                       burrow-runtime-burrow-test-busybox-runtime:bbb\t2026-12-01 22:00:00 +0000 UTC\n\
                       burrow-runtime-burrow-test-python-runtime:ccc\t2026-11-30 10:00:00 +0000 UTC\n\
                       burrow-runtime-burrow-test-busybox-runtime:ddd\t2026-11-01 09:00:00 +0000 UTC\n";
        assert_eq!(
            outdated_tags(listing),
            vec![
                "burrow-runtime-burrow-test-busybox-runtime:aaa",
                "burrow-runtime-burrow-test-busybox-runtime:ddd",
            ]
        );
        assert!(outdated_tags("").is_empty());
    }

    #[test]
    fn an_untagged_image_is_ours_when_its_history_reaches_a_test_image() {
        let bases = vec!["478a5b7f2851".to_string()];
        assert!(built_on("0f1e2d3c4b5a\n<missing>\n478a5b7f2851\n", &bases));
        assert!(!built_on("0f1e2d3c4b5a\n<missing>\n", &bases));
        assert!(!built_on("", &bases));
    }
}
