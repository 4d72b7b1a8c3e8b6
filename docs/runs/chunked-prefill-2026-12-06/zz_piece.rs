use hat::model::WeightDtype;
use hat::serve::engine::{Piece, StepModel};
use hat::serve::model::BurnModel;
use burn::backend::NdArray;
use std::time::Instant;
type M = BurnModel<NdArray<f32>>;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let piece_len: usize = args.get(1).map_or(16, |s| s.parse().unwrap());
    let mode = args.get(2).cloned().unwrap_or("both".into());
    let mut m = M::random("small", 4096, 1, WeightDtype::F32, Default::default()).unwrap();
    let mut batch = m.new_batch();
    let mut states = Vec::new();
    for r in 0..8u32 {
        let p: Vec<u32> = (0..48u32).map(|i| (i * 37 + r * 101 + 5) % 4096).collect();
        states.push(m.prefill_batch(vec![(&p, None)]).pop().unwrap().unwrap().state);
    }
    m.join(&mut batch, states).unwrap();
    let long: Vec<u32> = (0..4000u32).map(|i| (i * 31 + 3) % 4096).collect();
    let mut partial = None;
    let (mut plain, mut mixed, mut sep) = (vec![], vec![], vec![]);
    let iters: usize = args.get(3).map_or(60, |s| s.parse().unwrap());
    for it in 0..iters {
        let toks = [(it % 4000) as u32; 8];
        if mode == "both" || mode == "plain" {
            let t = Instant::now();
            m.decode(&toks, &mut batch, None).unwrap();
            plain.push(t.elapsed().as_secs_f64() * 1e3);
        }
        if mode == "both" || mode == "mixed" {
            let t = Instant::now();
            let d = m.decode(&toks, &mut batch, Some(Piece { prompt: &long, partial: partial.take(), budget: piece_len })).unwrap();
            mixed.push(t.elapsed().as_secs_f64() * 1e3);
            partial = Some(d.piece.unwrap().unwrap());
        }
        if mode == "both" {
            let p = partial.as_mut().unwrap();
            let t = Instant::now();
            m.model.advance(&long[p.pos..p.pos + piece_len], &mut p.state).unwrap();
            sep.push(t.elapsed().as_secs_f64() * 1e3);
            p.pos += piece_len;
        }
    }
    let med = |v: &mut Vec<f64>| { if v.is_empty() {return 0.0}; v.sort_by(f64::total_cmp); v[v.len() / 2] };
    println!("piece {piece_len}: plain {:.2} ms, mixed {:.2} ms, piece alone {:.2} ms", med(&mut plain), med(&mut mixed), med(&mut sep));
}
