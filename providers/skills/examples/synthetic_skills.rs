//! Write generated skills (10 triggers each, as the benches use) into a folder, for timing
//! whole processes at scale:
//!
//! ```sh
//! cargo run --release -p ctxkit-skills --example synthetic_skills -- /tmp/skills-10k 10000
//! hyperfine "target/release/ctxkit skills match --dir /tmp/skills-10k 'please review this'"
//! ```

#[path = "../benches/support/mod.rs"]
mod support;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(n)) = (args.next(), args.next().and_then(|n| n.parse().ok())) else {
        eprintln!("usage: synthetic_skills DIR COUNT");
        std::process::exit(2);
    };
    support::write_skill_files(std::path::Path::new(&dir), n);
    println!("wrote {n} skills under {dir}");
}
