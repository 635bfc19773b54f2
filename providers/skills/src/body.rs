//! A skill's text: in memory, or — for a skill from the index cache — read from the cache
//! file the first time it is used. A process started per prompt then reads the few bodies it
//! injects, not the megabytes of every skill.

use std::fmt;
use std::fs::File;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A skill's Markdown body. Use it as a `&str` (it derefs to one).
#[derive(Default)]
pub struct Body {
    text: OnceLock<String>,
    /// Where the text is, until it is read.
    deferred: Option<Deferred>,
}

/// A byte range of an open cache file. The file is replaced only by renaming a new one over
/// it, so the open handle keeps reading the version the index was loaded from.
struct Deferred {
    file: Arc<File>,
    offset: u64,
    len: usize,
}

impl Body {
    /// A body `len` bytes long at `offset` in `file`, read on first use.
    pub(crate) fn deferred(file: Arc<File>, offset: u64, len: usize) -> Body {
        Body {
            text: OnceLock::new(),
            deferred: Some(Deferred { file, offset, len }),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        self.text.get_or_init(|| match &self.deferred {
            None => String::new(),
            Some(d) => d.read().unwrap_or_else(|e| {
                tracing::warn!("a skill's text could not be read from the index cache ({e}); delete the cache folder if this persists");
                String::new()
            }),
        })
    }
}

impl Deferred {
    fn read(&self) -> std::io::Result<String> {
        let mut bytes = vec![0; self.len];
        read_exact_at(&self.file, &mut bytes, self.offset)?;
        String::from_utf8(bytes).map_err(std::io::Error::other)
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

impl From<String> for Body {
    fn from(text: String) -> Body {
        Body {
            text: OnceLock::from(text),
            deferred: None,
        }
    }
}

impl From<&str> for Body {
    fn from(text: &str) -> Body {
        Body::from(text.to_string())
    }
}

impl Deref for Body {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Body {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Body {}

impl PartialEq<str> for Body {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Body {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for Body {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Body, D::Error> {
        String::deserialize(deserializer).map(Body::from)
    }
}

impl Clone for Body {
    fn clone(&self) -> Body {
        Body::from(self.as_str())
    }
}
