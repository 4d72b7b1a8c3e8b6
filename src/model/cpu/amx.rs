//! Intel AMX tile products for the prefill of reduced weights: `tdpbf16ps` (bf16 pairs into f32
//! sums) and `tdpbssd` (int8 quadruples into exact i32 sums), each multiplying a 16 × 64-byte tile
//! of weight rows by a 16 × 64-byte tile of activations — 8,192 bf16 or 16,384 int8 products per
//! instruction, where an AVX-512 fused multiply-add does 16. A prefill product is compute-bound,
//! so this is where its time goes down (the decode products read each weight once per token and
//! stay with the dot products of [`super::reduced`]).
//!
//! The weights are used as stored (`[out, in]` rows, the left operand: a tile is 16 rows of 64
//! bytes at the row stride, no repacking), and the activations are the right operand, which AMX
//! wants in 4-byte groups: tile row `r` holds, for each of 16 activation rows, the 4-byte word `r`
//! of its 64-byte block (two bf16 or four int8 values that pair with the same weight columns). The
//! sums come out as 16 output channels × 16 activation rows, the transposed layout the decode
//! products write too.
//!
//! Rust has no stable AMX intrinsics, so the instructions are inline assembly, and the CPU check
//! reads CPUID itself. Linux hands out the tile registers' 8 KB of thread state only on request
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM)`, once per process); a refusal means no AMX here.

use super::reduced::round_to_bf16;
use half::bf16;
use std::arch::asm;
use std::sync::OnceLock;

/// Bytes in a tile row: the inner dimension comes in blocks of this many bytes.
pub const BLOCK_BYTES: usize = 64;
/// Rows of a tile: 16 output channels, or 16 activation rows.
const TILE: usize = 16;
/// 4-byte words in a tile of activations.
const TILE_WORDS: usize = TILE * BLOCK_BYTES / 4;

/// Which product the tiles compute.
#[derive(Clone, Copy)]
pub enum Dot {
    /// bf16 pairs into f32 sums.
    Bf16,
    /// Signed int8 quadruples into i32 sums.
    Int8,
}

/// Whether the CPU has AMX with bf16 and int8 tiles and the kernel lets this process use them.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| cpu_has_amx() && request_tile_state())
}

/// CPUID leaf 7: EDX bits 22 (AMX-BF16), 24 (AMX-TILE) and 25 (AMX-INT8).
fn cpu_has_amx() -> bool {
    use std::arch::x86_64::__cpuid_count;
    let (max_leaf, leaf7) = (__cpuid_count(0, 0).eax, __cpuid_count(7, 0));
    const BITS: u32 = (1 << 22) | (1 << 24) | (1 << 25);
    max_leaf >= 7 && leaf7.edx & BITS == BITS
}

/// Asks Linux for the tile data state (`ARCH_REQ_XCOMP_PERM`, `XFEATURE_XTILEDATA`); other systems
/// are not asked, and use no tiles.
fn request_tile_state() -> bool {
    #[cfg(target_os = "linux")]
    {
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: a system call with integer arguments; it changes no memory of ours.
        unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            ) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Activations laid out as AMX's right operand: `[row tiles][blocks][16 words][16 rows]` of 4-byte
/// words, rows past the last zero (they add nothing, and their sums are not read).
pub struct PackedRows {
    words: Vec<u32>,
    rows: usize,
    blocks: usize,
}

impl PackedRows {
    /// `x`: `rows` rows of `row_bytes` bytes each (a multiple of [`BLOCK_BYTES`]), row-major.
    pub fn new(x: &[u8], rows: usize, row_bytes: usize) -> Self {
        assert_eq!(row_bytes % BLOCK_BYTES, 0, "whole blocks");
        assert_eq!(x.len(), rows * row_bytes, "values fill the shape");
        let mut packed = Self::zeros(rows, row_bytes / BLOCK_BYTES);
        for (r, row) in x.chunks_exact(row_bytes).enumerate() {
            for (w, word) in row.chunks_exact(4).enumerate() {
                *packed.word(r, w) = u32::from_ne_bytes(word.try_into().expect("4 bytes"));
            }
        }
        packed
    }

    /// The columns of `b: [k, n]` (f32, row-major) as `n` rows of `k` bf16 values each, rounded to
    /// the nearest and padded with zeros to whole blocks: a right operand given as it is used
    /// (attention's values, `[keys, head_dim]`), packed without a transposed copy.
    pub fn bf16_columns(b: &[f32], k: usize, n: usize) -> Self {
        assert_eq!(b.len(), k * n, "values fill the shape");
        let mut rounded = vec![bf16::ZERO; b.len()];
        round_to_bf16(b, &mut rounded);
        let mut packed = Self::zeros(n, k.div_ceil(BLOCK_BYTES / 2));
        // Word `w` of row `j` holds the values of rows 2w and 2w + 1 of column `j`.
        for (w, pair) in rounded.chunks(2 * n).enumerate() {
            for j in 0..n {
                let low = pair[j].to_bits() as u32;
                let high = pair.get(n + j).map_or(0, |v| v.to_bits() as u32);
                *packed.word(j, w) = low | high << 16;
            }
        }
        packed
    }

    /// `rows` rows of `blocks` blocks of zeros.
    fn zeros(rows: usize, blocks: usize) -> Self {
        Self {
            words: vec![0u32; rows.div_ceil(TILE) * blocks * TILE_WORDS],
            rows,
            blocks,
        }
    }

    /// The 4-byte word `w` of row `r`: in row `r`'s tile and `w`'s block, tile row `w % 16`,
    /// column `r % 16`.
    fn word(&mut self, r: usize, w: usize) -> &mut u32 {
        let (tile, block) = (r / TILE, w / TILE);
        &mut self.words[(tile * self.blocks + block) * TILE_WORDS + (w % TILE) * TILE + r % TILE]
    }

    fn tile(&self, tile: usize) -> *const u32 {
        self.words[tile * self.blocks * TILE_WORDS..].as_ptr()
    }
}

/// The left operand of [`product`]: `n` rows of `blocks` 64-byte blocks, `stride` bytes apart (the
/// weight rows as stored; or attention's keys, or its probabilities of a block of queries, whose
/// rows are longer than the part the product reads).
pub struct Rows<'a> {
    pub bytes: &'a [u8],
    pub n: usize,
    pub stride: usize,
    pub blocks: usize,
}

impl<'a> Rows<'a> {
    /// `n` contiguous rows of `row_bytes` bytes each (a multiple of [`BLOCK_BYTES`]).
    pub fn dense(bytes: &'a [u8], n: usize, row_bytes: usize) -> Self {
        assert_eq!(row_bytes % BLOCK_BYTES, 0, "whole blocks");
        Self {
            bytes,
            n,
            stride: row_bytes,
            blocks: row_bytes / BLOCK_BYTES,
        }
    }
}

/// `store(c, r, sum)` for each of the `w.n` rows `c` of `w` and each activation row `r` of `x`,
/// activation row by activation row within a tile (so that an `[m, n]` output is written 16
/// channels at a time), where `sum` is the raw 32-bit sum of the products over the first `w.blocks`
/// blocks of both (at most `x`'s): an f32 for [`Dot::Bf16`], an i32 for [`Dot::Int8`].
///
/// # Safety
/// [`available`] returned true.
pub unsafe fn product(dot: Dot, w: Rows, x: &PackedRows, mut store: impl FnMut(usize, usize, u32)) {
    let (m, n, stride, blocks) = (x.rows, w.n, w.stride, w.blocks);
    assert!(blocks <= x.blocks, "the activations cover the blocks read");
    let row_bytes = blocks * BLOCK_BYTES;
    assert!(
        n == 0 || w.bytes.len() >= (n - 1) * stride + row_bytes,
        "weight rows for every output"
    );
    // The last tile of weight rows, when short, is read from a copy padded with zero rows.
    let mut padded = Vec::new();
    let tail = n % TILE;
    if tail > 0 {
        padded = vec![0u8; TILE * stride];
        for i in 0..tail {
            let from = (n - tail + i) * stride;
            padded[i * stride..][..row_bytes].copy_from_slice(&w.bytes[from..from + row_bytes]);
        }
    }
    let rows_at = |c: usize| {
        if c + TILE > n {
            padded.as_ptr()
        } else {
            w.bytes[c * stride..].as_ptr()
        }
    };
    let mut sums = [[0u32; TILE * TILE]; 4];
    configure_tiles();
    // Two tiles of activation rows (32 KB at most, for rows of 1 KB: they stay in the L1 cache)
    // against every pair of weight tiles in turn (streamed from L2, where the band stays).
    for t in (0..m.div_ceil(TILE)).step_by(2) {
        let row_tiles = if (t + 1) * TILE < m { 2 } else { 1 };
        let b = [x.tile(t), x.tile(t + row_tiles - 1)];
        for c in (0..n).step_by(2 * TILE) {
            let channel_tiles = if c + TILE < n { 2 } else { 1 };
            let a = [rows_at(c), rows_at(c + TILE)];
            match (channel_tiles, row_tiles) {
                (2, 2) => tiles::<2, 2>(dot, a, stride, b, blocks, &mut sums),
                (2, _) => tiles::<2, 1>(dot, a, stride, b, blocks, &mut sums),
                (_, 2) => tiles::<1, 2>(dot, a, stride, b, blocks, &mut sums),
                _ => tiles::<1, 1>(dot, a, stride, b, blocks, &mut sums),
            }
            // A sum tile is 16 channels (its rows) × 16 activation rows (its columns).
            for (s, tile_sums) in sums.iter().enumerate() {
                let (c0, r0) = (c + (s / 2) * TILE, (t + s % 2) * TILE);
                for j in 0..TILE.min(m.saturating_sub(r0)) {
                    for i in 0..TILE.min(n.saturating_sub(c0)) {
                        store(c0 + i, r0 + j, tile_sums[i * TILE + j]);
                    }
                }
            }
        }
    }
    // Back to the initial state: the 8 KB of tile data is not saved at each context switch.
    asm!("tilerelease", options(nostack));
}

/// Every tile 16 rows of 64 bytes (palette 1).
unsafe fn configure_tiles() {
    #[repr(C, align(64))]
    struct Config {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        bytes_per_row: [u16; 16],
        rows: [u8; 16],
    }
    let mut config = Config {
        palette: 1,
        start_row: 0,
        reserved: [0; 14],
        bytes_per_row: [0; 16],
        rows: [0; 16],
    };
    config.bytes_per_row[..8].fill(BLOCK_BYTES as u16);
    config.rows[..8].fill(TILE as u8);
    asm!("ldtilecfg [{}]", in(reg) &config as *const Config, options(nostack, readonly));
}

/// The sums of `C` channel tiles (weight rows at `a[i]`, `stride` bytes apart) by `R` row tiles of
/// activations (`b[j]`, blocks of 16 words by 16 rows, contiguous) over `blocks` blocks, into
/// `sums[2i + j]`. Registers: sums `tmm0`–`tmm3`, weights `tmm4`–`tmm5`, activations `tmm6`–`tmm7`.
#[inline(always)]
unsafe fn tiles<const C: usize, const R: usize>(
    dot: Dot,
    a: [*const u8; 2],
    stride: usize,
    b: [*const u32; 2],
    blocks: usize,
    sums: &mut [[u32; TILE * TILE]; 4],
) {
    macro_rules! tile_asm {
        ($($t:tt)*) => { asm!($($t)*, options(nostack)) };
    }
    tile_asm!("tilezero tmm0");
    tile_asm!("tilezero tmm1");
    tile_asm!("tilezero tmm2");
    tile_asm!("tilezero tmm3");
    let word_row = BLOCK_BYTES;
    for block in 0..blocks {
        let (a0, a1) = (a[0].add(block * BLOCK_BYTES), a[1].add(block * BLOCK_BYTES));
        let (b0, b1) = (b[0].add(block * TILE_WORDS), b[1].add(block * TILE_WORDS));
        tile_asm!("tileloadd tmm4, [{} + {}*1]", in(reg) a0, in(reg) stride);
        tile_asm!("tileloadd tmm6, [{} + {}*1]", in(reg) b0, in(reg) word_row);
        if C == 2 {
            tile_asm!("tileloadd tmm5, [{} + {}*1]", in(reg) a1, in(reg) stride);
        }
        if R == 2 {
            tile_asm!("tileloadd tmm7, [{} + {}*1]", in(reg) b1, in(reg) word_row);
        }
        // The four products of this step, with the dot's instruction.
        macro_rules! products {
            ($op:literal) => {{
                tile_asm!(concat!($op, " tmm0, tmm4, tmm6"));
                if R == 2 {
                    tile_asm!(concat!($op, " tmm1, tmm4, tmm7"));
                }
                if C == 2 {
                    tile_asm!(concat!($op, " tmm2, tmm5, tmm6"));
                }
                if C == 2 && R == 2 {
                    tile_asm!(concat!($op, " tmm3, tmm5, tmm7"));
                }
            }};
        }
        match dot {
            Dot::Bf16 => products!("tdpbf16ps"),
            Dot::Int8 => products!("tdpbssd"),
        }
    }
    let out_row = TILE * 4;
    tile_asm!("tilestored [{} + {}*1], tmm0", in(reg) sums[0].as_mut_ptr(), in(reg) out_row);
    if R == 2 {
        tile_asm!("tilestored [{} + {}*1], tmm1", in(reg) sums[1].as_mut_ptr(), in(reg) out_row);
    }
    if C == 2 {
        tile_asm!("tilestored [{} + {}*1], tmm2", in(reg) sums[2].as_mut_ptr(), in(reg) out_row);
    }
    if C == 2 && R == 2 {
        tile_asm!("tilestored [{} + {}*1], tmm3", in(reg) sums[3].as_mut_ptr(), in(reg) out_row);
    }
}
