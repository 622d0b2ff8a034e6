//! Bearer tokens: the `--tokens FILE` of `burrow serve`, one line per token, `SHA256HEX TENANT NAME`; found by hash in constant time, never kept or logged in the clear.

use std::io::Write as _;
use std::path::Path;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::{ServeError, ServeErrorKind, ServeResult};

/// Whom a token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The tenant whose threads the token sees.
    pub tenant: String,
    /// The token's name (for people; never the token).
    pub name: String,
}

/// The tokens the server accepts.
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<([u8; 32], Principal)>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The hashes are not secret, but there is no reason to print them.
        f.debug_struct("Tokens")
            .field("count", &self.entries.len())
            .finish()
    }
}

fn sha256(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        let digit = |c: u8| char::from(c).to_digit(16);
        let (hi, lo) = (digit(pair[0])?, digit(pair[1])?);
        out[i] = u8::try_from(hi * 16 + lo).ok()?;
    }
    Some(out)
}

/// A tenant or token name: one word of printable characters.
fn check_word(what: &str, word: &str) -> ServeResult<()> {
    if word.is_empty()
        || word.len() > 200
        || word.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(ServeError::new(
            ServeErrorKind::InvalidArgument,
            format!("a token's {what} must be one word of 1 to 200 printable characters"),
        ));
    }
    Ok(())
}

impl Tokens {
    /// The tokens of a tokens file's text; a malformed line is refused, naming its number.
    ///
    /// Blank lines and lines starting with `#` are skipped.
    pub fn parse(text: &str) -> ServeResult<Self> {
        let mut entries = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let bad = || {
                ServeError::new(
                    ServeErrorKind::Tokens,
                    format!(
                        "line {} of the tokens file is not `SHA256HEX TENANT NAME`",
                        n + 1
                    ),
                )
            };
            let [hash, tenant, name] = fields[..] else {
                return Err(bad());
            };
            let hash = unhex(hash).ok_or_else(bad)?;
            entries.push((
                hash,
                Principal {
                    tenant: tenant.to_owned(),
                    name: name.to_owned(),
                },
            ));
        }
        Ok(Self { entries })
    }

    /// The tokens of the file at `path`.
    pub fn load(path: &Path) -> ServeResult<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ServeError::new(
                ServeErrorKind::Tokens,
                format!("the tokens file cannot be read ({})", e.kind()),
            )
        })?;
        Self::parse(&text)
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there is none (the server then accepts no request).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whom `token` stands for, if it is one of these.
    ///
    /// # Behavior
    /// The token's SHA-256 is compared with every entry in constant time,
    /// without stopping at a match, so the time taken does not say which
    /// entry (or how much of a hash) matched.
    pub fn verify(&self, token: &str) -> Option<&Principal> {
        let presented = sha256(token);
        let mut found = None;
        for (hash, principal) in &self.entries {
            if bool::from(hash.ct_eq(&presented)) && found.is_none() {
                found = Some(principal);
            }
        }
        found
    }
}

/// Makes a random token for `tenant` named `name`, appends its line to the
/// tokens file at `path` (created if missing, readable by its owner only),
/// and returns the token: the one time it is seen.
pub fn add_token(path: &Path, tenant: &str, name: &str) -> ServeResult<String> {
    check_word("tenant", tenant)?;
    check_word("name", name)?;
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|_| {
        ServeError::new(
            ServeErrorKind::Tokens,
            "the system gave no random bytes for a token",
        )
    })?;
    let token = format!("bt_{}", hex(&secret));
    let line = format!("{} {tenant} {name}\n", hex(&sha256(&token)));
    let io = |e: std::io::Error| {
        ServeError::new(
            ServeErrorKind::Tokens,
            format!("the tokens file cannot be written ({})", e.kind()),
        )
    };
    if path.exists() {
        // A file that does not parse is not appended to.
        Tokens::load(path)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io)?;
    file.write_all(line.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_found_by_its_hash_and_a_wrong_one_is_not() {
        let line = format!("{} acme alice\n", hex(&sha256("secret-1")));
        let tokens = Tokens::parse(&format!("# comment\n\n{line}")).unwrap();
        assert_eq!(tokens.len(), 1);
        let p = tokens.verify("secret-1").unwrap();
        assert_eq!((p.tenant.as_str(), p.name.as_str()), ("acme", "alice"));
        assert!(tokens.verify("secret-2").is_none());
        assert!(tokens.verify("").is_none());
    }

    #[test]
    fn a_malformed_line_is_refused_with_its_number() {
        for text in ["abc acme alice", "x y", &format!("{} acme", hex(&[0; 32]))] {
            let e = Tokens::parse(&format!("\n{text}\n")).unwrap_err();
            assert_eq!(e.kind(), ServeErrorKind::Tokens);
            assert!(e.message().contains("line 2"), "{e}");
        }
    }

    #[test]
    fn hex_round_trips() {
        let bytes: [u8; 32] = std::array::from_fn(|i| u8::try_from(i * 7).unwrap());
        assert_eq!(unhex(&hex(&bytes)), Some(bytes));
        assert_eq!(unhex(&"g".repeat(64)), None);
    }
}
