//! Several OpenAI-compatible endpoints (vLLM, SGLang, `serve` replicas) behind one client: each request
//! goes to the endpoint with the fewest requests in flight, and every request of one session (the turns
//! of an episode) goes to the endpoint its first request went to, so the server's prefix cache holds the
//! conversation so far. verl's `AsyncLLMServerManager` routes the same way, with two differences: it
//! counts the requests ever assigned (never decremented) where this counts those still in flight, and it
//! remembers sessions in a bounded LRU cache where this forgets a session when its episode ends
//! ([`EndpointPool::end`]).
//!
//! Thread-safe and runtime-agnostic: one short mutex section per pick and per release, so blocking
//! clients on a thread pool (`teacher-distill collect`) and async tasks (`replay-bench`) share it alike.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use anyhow::{bail, Result};

/// Endpoints and their load; see the module docs.
#[derive(Debug)]
pub struct EndpointPool {
    urls: Vec<String>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Per endpoint: requests picked and not yet released.
    in_flight: Vec<usize>,
    /// Per endpoint: requests picked so far.
    sent: Vec<u64>,
    /// Session key → the endpoint its requests go to.
    sessions: HashMap<String, usize>,
}

/// One request's hold on an endpoint: counted in flight until dropped.
#[derive(Debug)]
pub struct EndpointGuard<'a> {
    pool: &'a EndpointPool,
    index: usize,
}

impl EndpointGuard<'_> {
    /// The endpoint's position in the pool (the order given).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The endpoint's URL, as given.
    pub fn url(&self) -> &str {
        &self.pool.urls[self.index]
    }
}

impl Drop for EndpointGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.pool.lock();
        s.in_flight[self.index] = s.in_flight[self.index].saturating_sub(1);
    }
}

impl EndpointPool {
    /// A pool of `urls` (at least one; each given once).
    pub fn new(urls: Vec<String>) -> Result<EndpointPool> {
        if urls.is_empty() {
            bail!("no endpoint given");
        }
        for (i, u) in urls.iter().enumerate() {
            if urls[..i].contains(u) {
                bail!("endpoint {u} is given twice");
            }
        }
        let n = urls.len();
        Ok(EndpointPool {
            urls,
            state: Mutex::new(State {
                in_flight: vec![0; n],
                sent: vec![0; n],
                sessions: HashMap::new(),
            }),
        })
    }

    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    pub fn len(&self) -> usize {
        self.urls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }

    /// A poisoned lock only means a panic elsewhere held it; the counts are still whole.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The endpoint for the next request of `session` (`None`: a request of no session). A session
    /// already assigned keeps its endpoint until [`end`](Self::end); otherwise the endpoint with the
    /// fewest requests in flight, ties going to the one sent fewer requests so far, then to the
    /// earlier one — so a client sending one request at a time still spreads its sessions.
    pub fn pick(&self, session: Option<&str>) -> EndpointGuard<'_> {
        let mut s = self.lock();
        let known = session.and_then(|k| s.sessions.get(k).copied());
        let index = known.unwrap_or_else(|| {
            (0..self.urls.len())
                .min_by_key(|&i| (s.in_flight[i], s.sent[i], i))
                .unwrap_or(0)
        });
        if let (Some(k), None) = (session, known) {
            s.sessions.insert(k.to_string(), index);
        }
        s.in_flight[index] += 1;
        s.sent[index] += 1;
        EndpointGuard { pool: self, index }
    }

    /// Forgets `session` (its episode is over): its next request, if any, is routed afresh.
    pub fn end(&self, session: &str) {
        self.lock().sessions.remove(session);
    }

    /// Requests picked so far, per endpoint.
    pub fn sent(&self) -> Vec<u64> {
        self.lock().sent.clone()
    }

    /// Requests in flight now, per endpoint.
    pub fn in_flight(&self) -> Vec<usize> {
        self.lock().in_flight.clone()
    }

    /// Sessions remembered now.
    pub fn open_sessions(&self) -> usize {
        self.lock().sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(n: usize) -> EndpointPool {
        EndpointPool::new((0..n).map(|i| format!("http://e{i}")).collect()).unwrap()
    }

    #[test]
    fn picks_the_endpoint_with_fewest_in_flight_and_releases_on_drop() {
        let p = pool(3);
        let a = p.pick(None);
        let b = p.pick(None);
        let c = p.pick(None);
        assert_eq!((a.index(), b.index(), c.index()), (0, 1, 2));
        assert_eq!(p.in_flight(), vec![1, 1, 1]);
        drop(b);
        assert_eq!(p.in_flight(), vec![1, 0, 1]);
        // Endpoint 1 is the only one with nothing in flight.
        let d = p.pick(None);
        assert_eq!(d.index(), 1);
        assert_eq!(d.url(), "http://e1");
        let e = p.pick(None);
        // All have one in flight; endpoint 0 and 2 were sent one request, endpoint 1 two: 0 wins.
        assert_eq!(e.index(), 0);
        drop((a, c, d, e));
        assert_eq!(p.in_flight(), vec![0, 0, 0]);
        assert_eq!(p.sent(), vec![2, 2, 1]);
    }

    #[test]
    fn one_request_at_a_time_still_spreads_over_every_endpoint() {
        let p = pool(3);
        let order: Vec<usize> = (0..6).map(|_| p.pick(None).index()).collect();
        assert_eq!(order, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn a_session_keeps_its_endpoint_until_it_ends() {
        let p = pool(2);
        let first = p.pick(Some("ep-a"));
        assert_eq!(first.index(), 0);
        // While ep-a has a request in flight on 0, and after it finished, it stays on 0 even though 1
        // is idle.
        let again = p.pick(Some("ep-a"));
        assert_eq!(again.index(), 0);
        drop((first, again));
        let other = p.pick(Some("ep-b"));
        assert_eq!(other.index(), 1);
        for _ in 0..5 {
            assert_eq!(p.pick(Some("ep-a")).index(), 0);
        }
        assert_eq!(p.open_sessions(), 2);
        p.end("ep-a");
        assert_eq!(p.open_sessions(), 1);
        // Routed afresh: 1 has ep-b's request in flight, so 0.
        assert_eq!(p.pick(Some("ep-a")).index(), 0);
        drop(other);
        p.end("ep-a");
        p.end("ep-b");
        p.end("never-seen");
        assert_eq!(p.open_sessions(), 0);
        assert_eq!(p.in_flight(), vec![0, 0]);
    }

    #[test]
    fn sessionless_requests_are_not_remembered() {
        let p = pool(2);
        for _ in 0..10 {
            drop(p.pick(None));
        }
        assert_eq!(p.open_sessions(), 0);
        assert_eq!(p.sent(), vec![5, 5]);
    }

    #[test]
    fn counts_stay_exact_under_threads() {
        let p = pool(4);
        std::thread::scope(|s| {
            for t in 0..8 {
                let p = &p;
                s.spawn(move || {
                    for k in 0..500 {
                        let key = format!("t{t}-ep{}", k / 5);
                        let g = p.pick(Some(&key));
                        let again = p.pick(Some(&key));
                        assert_eq!(g.index(), again.index());
                        if k % 5 == 4 {
                            p.end(&key);
                        }
                    }
                });
            }
        });
        assert_eq!(p.in_flight(), vec![0; 4]);
        assert_eq!(p.sent().iter().sum::<u64>(), 8 * 500 * 2);
        assert_eq!(p.open_sessions(), 0);
    }

    #[test]
    fn rejects_an_empty_or_repeated_list() {
        assert!(EndpointPool::new(vec![]).is_err());
        let err = EndpointPool::new(vec!["http://a".into(), "http://a".into()]).unwrap_err();
        assert!(err.to_string().contains("http://a"), "{err}");
    }
}
