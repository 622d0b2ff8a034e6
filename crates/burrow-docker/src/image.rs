//! Images: use a ready one, or build a `RuntimeConfig`'s Dockerfile through the engine's build API, reusing it while the config is unchanged.

use std::collections::VecDeque;

use bollard::Docker;
use bollard::query_parameters::{BuildImageOptionsBuilder, CreateImageOptionsBuilder};
use burrow_backend::{Error, Result};
use burrow_types::RuntimeConfig;
use futures::StreamExt;

use crate::dockerfile::{Dockerfile, dockerfile};
use crate::engine;

/// Lines of build output kept for an error message.
const LOG_TAIL: usize = 20;

/// The image a sandbox for `config` runs, and the user it runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeImage {
    /// The image reference (the ready `image`, or the built tag).
    pub image: String,
    /// The docker user spec (`"uid:uid"`) when the image was built around `run_as_uid`.
    pub user: Option<String>,
    /// True when this call built the image; false when it was already there.
    pub built: bool,
}

/// True when the engine has `image` locally.
pub async fn image_exists(docker: &Docker, image: &str) -> Result<bool> {
    match docker.inspect_image(image).await {
        Ok(_) => Ok(true),
        Err(e) if engine::status(&e) == Some(404) => Ok(false),
        Err(e) => Err(engine::failure("look up an image", e)),
    }
}

/// Makes sure `image` is available: present locally, or pulled.
pub async fn ensure_image(docker: &Docker, image: &str) -> Result<()> {
    if image_exists(docker, image).await? {
        return Ok(());
    }
    let options = CreateImageOptionsBuilder::default()
        .from_image(image)
        .build();
    let mut pull = docker.create_image(Some(options), None, None);
    while let Some(step) = pull.next().await {
        if let Err(e) = step {
            return Err(Error::failure(
                format!(
                    "the image \"{image}\" is not available locally and could not be pulled: {}",
                    engine::describe(&e)
                ),
                e,
            ));
        }
    }
    if image_exists(docker, image).await? {
        Ok(())
    } else {
        Err(Error::failure_msg(format!(
            "the image \"{image}\" is not available after pulling it"
        )))
    }
}

/// The image for `config`: its ready `image` as it is, or its generated
/// Dockerfile built and tagged by a hash of the text (reused while it exists
/// and `cache_image` is on; rebuilt without the layer cache when it is off).
pub async fn runtime_image(docker: &Docker, config: &RuntimeConfig) -> Result<RuntimeImage> {
    if let Some(image) = &config.image {
        ensure_image(docker, image).await?;
        return Ok(RuntimeImage {
            image: image.clone(),
            user: None,
            built: false,
        });
    }
    let file = dockerfile(config)?;
    if config.cache_image && image_exists(docker, &file.tag).await? {
        return Ok(RuntimeImage {
            image: file.tag,
            user: file.user,
            built: false,
        });
    }
    build(docker, &file, !config.cache_image).await?;
    Ok(RuntimeImage {
        image: file.tag,
        user: file.user,
        built: true,
    })
}

/// Builds `file` through the engine's (classic) build API with a one-file context.
pub async fn build(docker: &Docker, file: &Dockerfile, no_cache: bool) -> Result<()> {
    let context = context_tar(&file.text)?;
    let options = BuildImageOptionsBuilder::default()
        .dockerfile("Dockerfile")
        .t(&file.tag)
        .rm(true)
        .forcerm(true)
        .nocache(no_cache)
        .build();
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(context.into())));
    let mut tail: VecDeque<String> = VecDeque::with_capacity(LOG_TAIL);
    let mut keep = |line: &str| {
        for l in line.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
            if tail.len() == LOG_TAIL {
                tail.pop_front();
            }
            tail.push_back(l.to_owned());
        }
    };
    while let Some(step) = stream.next().await {
        match step {
            Ok(info) => {
                if let Some(text) = &info.stream {
                    keep(text);
                }
                if let Some(detail) = info.error_detail {
                    let message = detail.message.unwrap_or_default();
                    return Err(build_failed(&file.tag, &message, &tail));
                }
            }
            Err(e) => {
                let message = engine::describe(&e);
                return Err(Error::failure(
                    build_failed(&file.tag, &message, &tail)
                        .message()
                        .to_owned(),
                    e,
                ));
            }
        }
    }
    if image_exists(docker, &file.tag).await? {
        Ok(())
    } else {
        Err(build_failed(
            &file.tag,
            "the engine reported no image",
            &tail,
        ))
    }
}

fn build_failed(tag: &str, why: &str, tail: &VecDeque<String>) -> Error {
    let log: Vec<&str> = tail.iter().map(String::as_str).collect();
    Error::failure_msg(format!(
        "building the runtime image {tag} failed: {why}; last build output: {}",
        log.join(" | ")
    ))
}

/// A build context holding only `Dockerfile`.
fn context_tar(text: &str) -> Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_ustar();
    header.set_size(text.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    let built = builder
        .append_data(&mut header, "Dockerfile", text.as_bytes())
        .and_then(|()| builder.finish());
    built.map_err(|e| Error::failure("could not pack the build context", e))?;
    builder
        .into_inner()
        .map_err(|e| Error::failure("could not pack the build context", e))
}
