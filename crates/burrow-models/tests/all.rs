//! The one integration-test binary of burrow-models: modules only, in `tests/all/`; every adapter against recorded wire fixtures served from 127.0.0.1.

#[cfg(test)]
mod all {
    #[cfg(feature = "anthropic")]
    mod anthropic;
    #[cfg(any(feature = "openai", feature = "anthropic"))]
    mod cancel;
    mod http;
    #[cfg(feature = "openai")]
    mod openai_chat;
    #[cfg(feature = "openai")]
    mod openai_responses;
    mod support;
}
