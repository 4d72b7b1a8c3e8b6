//! The table of open episodes: ids, a cap on how many are open, an idle time-out, and memory of
//! recently expired and finished ids so a late request learns what happened to its episode (410,
//! 409) instead of a bare "unknown" (404). Each session has its own lock, so a slow step (a command
//! hook waiting on its time-out) holds up only its own episode.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::agent::runtime::Episode;
use crate::serve::server::unique_id;

use super::setup::Setting;

/// Ids of expired and finished sessions remembered, each.
const REMEMBERED: usize = 65_536;

/// One open episode.
pub struct Session {
    pub setting: Arc<Setting>,
    /// `None` once the episode is finished and recorded.
    pub episode: Option<Episode<'static>>,
    pub last_used: Instant,
    pub return_trajectory: bool,
    /// `meta.policy` of the record.
    pub policy: String,
}

/// Why a session id cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Unknown,
    Expired,
    Finished,
}

#[derive(Default)]
struct Gone {
    order: VecDeque<String>,
    set: HashSet<String>,
}

impl Gone {
    fn add(&mut self, id: String) {
        if self.set.insert(id.clone()) {
            self.order.push_back(id);
        }
        while self.order.len() > REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}

pub struct Sessions {
    open: Mutex<HashMap<String, Arc<Mutex<Session>>>>,
    expired: Mutex<Gone>,
    finished: Mutex<Gone>,
    pub max_open: usize,
    pub idle: Duration,
}

impl Sessions {
    pub fn new(max_open: usize, idle: Duration) -> Sessions {
        Sessions {
            open: Mutex::new(HashMap::new()),
            expired: Mutex::new(Gone::default()),
            finished: Mutex::new(Gone::default()),
            max_open,
            idle,
        }
    }

    pub fn open_count(&self) -> usize {
        self.open.lock().unwrap().len()
    }

    /// Opens `session` under a new id; `None` when the cap is reached.
    pub fn insert(&self, session: Session) -> Option<String> {
        let mut open = self.open.lock().unwrap();
        if open.len() >= self.max_open {
            return None;
        }
        let id = format!("ep-{}", unique_id());
        open.insert(id.clone(), Arc::new(Mutex::new(session)));
        Some(id)
    }

    pub fn get(&self, id: &str) -> Result<Arc<Mutex<Session>>, Missing> {
        if let Some(s) = self.open.lock().unwrap().get(id) {
            return Ok(s.clone());
        }
        if self.finished.lock().unwrap().set.contains(id) {
            Err(Missing::Finished)
        } else if self.expired.lock().unwrap().set.contains(id) {
            Err(Missing::Expired)
        } else {
            Err(Missing::Unknown)
        }
    }

    /// Closes a finished episode's session.
    pub fn finish(&self, id: &str) {
        self.open.lock().unwrap().remove(id);
        self.finished.lock().unwrap().add(id.to_string());
    }

    /// Closes sessions idle longer than the time-out (a session busy in a step is not idle); returns
    /// how many.
    pub fn expire_idle(&self) -> usize {
        let now = Instant::now();
        let mut open = self.open.lock().unwrap();
        let stale: Vec<String> = open
            .iter()
            .filter(|(_, s)| {
                s.try_lock()
                    .is_ok_and(|s| now.duration_since(s.last_used) > self.idle)
            })
            .map(|(id, _)| id.clone())
            .collect();
        let mut expired = self.expired.lock().unwrap();
        for id in &stale {
            open.remove(id);
            expired.add(id.clone());
        }
        stale.len()
    }
}
