//! The one integration-test binary of burrow-serve: modules only, in `tests/all/`; each test starts a server on 127.0.0.1 port 0 and talks to it through reqwest.

#[cfg(test)]
mod all {
    mod api;
    #[cfg(feature = "artifacts")]
    mod artifacts;
    mod auth;
    mod browser;
    mod events;
    mod follow;
    mod limits;
    mod openapi;
    mod postgres;
    mod support;
    mod thread_view;
}
