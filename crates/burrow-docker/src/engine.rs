//! Talking to the Docker engine: connecting within a bounded time, and turning engine errors into burrow failures without host paths.

use bollard::Docker;
use bollard::errors::Error as EngineError;
use burrow_backend::{Error, Result};

use crate::options::{CONNECT_TIMEOUT_BOUNDS, DockerOptions, REQUEST_TIMEOUT_BOUNDS, clamp};

/// The engine's socket when `DOCKER_HOST` is unset.
const LOCAL_SOCKET: &str = "unix:///var/run/docker.sock";

/// Connects to the engine named by `DOCKER_HOST` (the local socket when unset)
/// and agrees on an API version, failing within `options.connect_timeout`.
pub async fn connect(options: &DockerOptions) -> Result<Docker> {
    let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| LOCAL_SOCKET.to_owned());
    connect_to(&host, options).await
}

/// Connects to the engine at `host` (`unix:///var/run/docker.sock`,
/// `tcp://127.0.0.1:2375`, `http://...`) and agrees on an API version,
/// failing within `options.connect_timeout`. No message shows the host.
pub async fn connect_to(host: &str, options: &DockerOptions) -> Result<Docker> {
    let docker = Docker::connect_with_host(host).map_err(|e| {
        Error::failure(
            format!(
                "the Docker engine is not reachable ({}); is the daemon running and DOCKER_HOST right?",
                describe(&e)
            ),
            e,
        )
    })?;
    negotiate(docker, options).await
}

/// Applies `options.request_timeout` to `docker` and negotiates the API
/// version (the engine may be older than bollard), failing within
/// `options.connect_timeout` when the engine does not answer.
pub async fn negotiate(docker: Docker, options: &DockerOptions) -> Result<Docker> {
    let docker = docker.with_timeout(clamp(options.request_timeout, REQUEST_TIMEOUT_BOUNDS));
    let limit = clamp(options.connect_timeout, CONNECT_TIMEOUT_BOUNDS);
    match tokio::time::timeout(limit, docker.negotiate_version()).await {
        Ok(Ok(docker)) => Ok(docker),
        Ok(Err(e)) => Err(Error::failure(
            format!(
                "the Docker engine is not reachable ({}); is the daemon running and DOCKER_HOST right?",
                describe(&e)
            ),
            e,
        )),
        Err(_) => Err(Error::failure_msg(format!(
            "the Docker engine did not answer within {} s; is the daemon running?",
            limit.as_secs_f64()
        ))),
    }
}

/// The HTTP status of an engine's error response, if it was one.
pub(crate) fn status(e: &EngineError) -> Option<u16> {
    match e {
        EngineError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// A failure for an engine error while doing `what` ("read a file", "start the container").
pub(crate) fn failure(what: &str, e: EngineError) -> Error {
    Error::failure(
        format!("the Docker engine failed to {what}: {}", describe(&e)),
        e,
    )
}

/// One line about `e`, without any absolute path the engine put in it
/// (engine messages can name host paths under its data root).
pub(crate) fn describe(e: &EngineError) -> String {
    match e {
        EngineError::DockerResponseServerError {
            status_code,
            message,
        } => format!("status {status_code}: {}", scrub(message)),
        EngineError::RequestTimeoutError => "the request timed out".to_owned(),
        EngineError::SocketNotFoundError(_) => "its socket does not exist".to_owned(),
        EngineError::HyperResponseError { .. } | EngineError::IOError { .. } => {
            format!("the connection broke ({})", scrub(&e.to_string()))
        }
        other => scrub(&other.to_string()),
    }
}

/// `message` on one line with every absolute path replaced by "<path>".
pub(crate) fn scrub(message: &str) -> String {
    message
        .split_whitespace()
        .map(|word| {
            let bare = word.trim_start_matches(['"', '\'', '(', '[']);
            if bare.starts_with('/') {
                "<path>"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_hides_absolute_paths() {
        let m = "lstat /var/lib/docker/overlay2/abc/merged/x: no such file\n(\"/etc\")";
        assert_eq!(scrub(m), "lstat <path> no such file <path>");
        let e = EngineError::DockerResponseServerError {
            status_code: 500,
            message: "open /var/lib/docker/x: denied".to_owned(),
        };
        assert_eq!(describe(&e), "status 500: open <path> denied");
        assert_eq!(status(&e), Some(500));
    }
}
