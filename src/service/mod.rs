//! The toolkit as services for distributed RL engines (verl, OpenRLHF, ROLL): the live-room
//! environment (`hat sim serve`: sessions of reset/step over HTTP, the episode's rewards at its end)
//! and the verifiable judge (`judge serve`: OpenRLHF's remote reward protocol and a plain JSON form
//! with the rewards per dimension, which GDPO needs). Protocols and examples: docs/services.md.
//!
//! Layout: [`http`] (what both services share: auth, body limit, JSON bodies, start/stop) ·
//! [`rewards`] (per-dimension rewards and the scalar of a judged episode) · [`env`] · [`reward`].

pub mod env;
pub mod http;
pub mod reward;
pub mod rewards;
