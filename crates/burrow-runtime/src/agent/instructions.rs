//! Instructions for the model: static text plus providers evaluated for every request.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::Error;

use crate::message::Message;

/// Adds instructions to each request (context files, memory, an output style, ...).
#[async_trait]
pub trait InstructionProvider: Send + Sync {
    /// The text to add for a request over `history`, or `None` for nothing.
    /// An `Err` ends the run as a failure.
    async fn instructions(&self, history: &[Message]) -> Result<Option<String>, Error>;
}

/// A provider from a closure.
pub struct FnProvider<F>(pub F);

impl<F> std::fmt::Debug for FnProvider<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnProvider")
    }
}

#[async_trait]
impl<F> InstructionProvider for FnProvider<F>
where
    F: Fn(&[Message]) -> Option<String> + Send + Sync,
{
    async fn instructions(&self, history: &[Message]) -> Result<Option<String>, Error> {
        Ok((self.0)(history))
    }
}

/// Static text plus providers; each request gets the text, then each
/// provider's part, separated by blank lines.
#[derive(Clone, Default)]
pub struct Instructions {
    text: String,
    providers: Vec<Arc<dyn InstructionProvider>>,
}

impl std::fmt::Debug for Instructions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instructions")
            .field("text", &self.text)
            .field("providers", &self.providers.len())
            .finish()
    }
}

impl Instructions {
    /// Only `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            providers: Vec::new(),
        }
    }

    /// Adds a provider.
    pub fn push(&mut self, provider: Arc<dyn InstructionProvider>) {
        self.providers.push(provider);
    }

    /// The providers, in order.
    pub fn providers(&self) -> &[Arc<dyn InstructionProvider>] {
        &self.providers
    }

    /// The static text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The instructions for a request over `history` (borrowed when there are no providers).
    pub async fn render(&self, history: &[Message]) -> Result<Cow<'_, str>, Error> {
        if self.providers.is_empty() {
            return Ok(Cow::Borrowed(&self.text));
        }
        let mut out = self.text.clone();
        for provider in &self.providers {
            if let Some(part) = provider.instructions(history).await?
                && !part.is_empty()
            {
                if !out.is_empty() {
                    out.push_str("\n\n");
                }
                out.push_str(&part);
            }
        }
        Ok(Cow::Owned(out))
    }
}
