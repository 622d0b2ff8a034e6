//! Running agents in session threads: live output fanned out to watchers (the runner over the session store builds on it).

pub mod live;

pub use live::{
    DEFAULT_LIVE_BUFFER, FanoutChannel, LiveChannel, LiveEvent, LiveFrame, NullChannel, emit_draft,
    with_live,
};
