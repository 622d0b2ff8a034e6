//! Amazon S3 and S3-compatible stores (feature `s3`): `ObjectStoreBackend::from_s3_url("s3://bucket/prefix")`, with bounded retries and timeouts.

use std::sync::Arc;
use std::time::Duration;

use burrow_backend::{Error, Result};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::{BackoffConfig, ClientConfigKey, RetryConfig};

use crate::backend::ObjectStoreBackend;
use crate::options::{ObjectStoreOptions, S3_MAX_KEY_BYTES};

/// How long one HTTP request to S3 may take, from connecting to the last byte.
pub const S3_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting to S3 may take.
pub const S3_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The retry policy for transient S3 errors (5xx, timeouts, lost
/// connections): 3 retries from 100 ms, doubling, and none started after
/// 15 s, so a stopped server turns into a failure within about
/// `S3_CONNECT_TIMEOUT × 4 + 15 s` rather than object_store's default 3 minutes.
pub fn s3_retry_config() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: 3,
        retry_timeout: Duration::from_secs(15),
    }
}

/// The bucket and key prefix of "s3://bucket/prefix" (the prefix may be empty).
pub fn parse_s3_url(url: &str) -> Result<(String, String)> {
    let rest = url.strip_prefix("s3://").ok_or_else(|| {
        Error::invalid_argument(format!(
            "\"{url}\" is not an S3 URL; write s3://BUCKET/PREFIX."
        ))
    })?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(Error::invalid_argument(format!(
            "\"{url}\" names no bucket; write s3://BUCKET/PREFIX."
        )));
    }
    Ok((bucket.to_owned(), prefix.trim_matches('/').to_owned()))
}

impl ObjectStoreBackend {
    /// A backend on the S3 bucket and prefix of `url` ("s3://bucket/prefix").
    ///
    /// Endpoint, region and credentials come from the usual AWS environment
    /// variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN`, `AWS_REGION` / `AWS_DEFAULT_REGION`, ...), plus
    /// `AWS_ENDPOINT_URL` for an S3-compatible server and `AWS_ALLOW_HTTP=true`
    /// to reach it without TLS (object_store's `AmazonS3Builder::from_env`).
    /// Conditional puts are on (S3 supports If-Match and If-None-Match on
    /// PUT); keys are limited to S3's 1,024 bytes.
    pub fn from_s3_url(url: &str) -> Result<Self> {
        Self::from_s3_builder(
            AmazonS3Builder::from_env(),
            url,
            ObjectStoreOptions::default(),
        )
    }

    /// As [`ObjectStoreBackend::from_s3_url`], from a builder you configured
    /// (endpoint, credentials, ...) and with `options`. The URL's prefix goes
    /// before `options.root`; `max_key_bytes` defaults to 1,024. The retry
    /// policy is [`s3_retry_config`], and requests time out after
    /// [`S3_REQUEST_TIMEOUT`] ([`S3_CONNECT_TIMEOUT`] to connect).
    pub fn from_s3_builder(
        builder: AmazonS3Builder,
        url: &str,
        options: ObjectStoreOptions,
    ) -> Result<Self> {
        let (bucket, prefix) = parse_s3_url(url)?;
        let store = builder
            .with_bucket_name(bucket)
            .with_retry(s3_retry_config())
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
                format!("{}s", S3_REQUEST_TIMEOUT.as_secs()),
            )
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                format!("{}s", S3_CONNECT_TIMEOUT.as_secs()),
            )
            .build()
            // object_store's message can quote configuration values; keep it in the source only.
            .map_err(|e| Error::failure("the S3 store could not be configured (check the bucket, region, endpoint and AWS_* variables)", e))?;
        let root = match (prefix.is_empty(), options.root.trim_matches('/').is_empty()) {
            (true, _) => options.root.clone(),
            (false, true) => prefix,
            (false, false) => format!("{prefix}/{}", options.root.trim_matches('/')),
        };
        let options = ObjectStoreOptions {
            root,
            max_key_bytes: options.max_key_bytes.or(Some(S3_MAX_KEY_BYTES)),
            ..options
        };
        let store = Arc::new(store);
        Ok(Self::with_options(store.clone(), options)?.with_paged_listing(store))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        assert_eq!(
            parse_s3_url("s3://b/p/q/").unwrap(),
            ("b".to_owned(), "p/q".to_owned())
        );
        assert_eq!(
            parse_s3_url("s3://b").unwrap(),
            ("b".to_owned(), String::new())
        );
        assert!(parse_s3_url("http://b").is_err());
        assert!(parse_s3_url("s3:///p").is_err());
    }
}
