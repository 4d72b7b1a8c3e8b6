//! Which rewards judge a completion and which policy learns it. With one policy, a tool-calling turn is
//! judged by the tool rewards and a reply by the reply rewards (separate groups, as in the paper). In
//! two-agent mode a completion belongs to the agent that wrote it (its message's `agent` tag): judged
//! by that agent's rewards, learnt by that agent's model only.

use std::collections::BTreeMap;

use super::update::{spans_of, Span};
use crate::agent::two_agent::AgentRole;
use crate::record::Trajectory;
use crate::train::view::{SegmentKind, TrainingView, ViewBuilder};

/// A step's episodes as training views, and their completions.
pub struct Completions<'t> {
    pub views: Vec<TrainingView>,
    /// Every completion with its side and its advantage (that side's, of its episode).
    pub spans: Vec<(AgentRole, Span)>,
    /// The episode of each view.
    pub viewed: Vec<&'t Trajectory>,
    /// Episodes without a view, by reason.
    pub skipped: BTreeMap<&'static str, usize>,
}

/// The views and completions of `episodes`; `advantages` are the tool and the reply advantage of each
/// episode.
pub fn completions<'t>(
    episodes: &[&'t Trajectory],
    builder: &ViewBuilder,
    [tool, reply]: [&[f64]; 2],
    two_agent: bool,
) -> Completions<'t> {
    let mut out = Completions {
        views: Vec::new(),
        spans: Vec::new(),
        viewed: Vec::new(),
        skipped: BTreeMap::new(),
    };
    for (e, t) in episodes.iter().enumerate() {
        match builder.build(t) {
            Ok(v) => {
                for mut span in spans_of(out.views.len(), &v, |_| 0.0) {
                    let side = side_of(&span, t, two_agent);
                    span.advantage = match side {
                        AgentRole::Tool => tool[e],
                        AgentRole::Reply => reply[e],
                    };
                    out.spans.push((side, span));
                }
                out.views.push(v);
                out.viewed.push(*t);
            }
            Err(why) => *out.skipped.entry(why.reason()).or_default() += 1,
        }
    }
    out
}

/// The side of a completion: in two-agent mode the agent that wrote it (by its kind if untagged),
/// otherwise its kind.
fn side_of(span: &Span, record: &Trajectory, two_agent: bool) -> AgentRole {
    let by_kind = match span.kind {
        SegmentKind::ToolCall => AgentRole::Tool,
        _ => AgentRole::Reply,
    };
    if !two_agent {
        return by_kind;
    }
    record
        .messages
        .get(span.message)
        .and_then(AgentRole::of)
        .unwrap_or(by_kind)
}
