use ctxkit_memory::secrets::find_secret;
fn main() {
    let field = "Always run the integration tests with pnpm before pushing to main";
    let long = "Before you deploy the staging stack, run the migrations and then restart the queue workers so the new jobs get picked up";
    for text in [field, long] {
        for _ in 0..3 {
            let n = 200_000;
            let t = std::time::Instant::now();
            for _ in 0..n {
                std::hint::black_box(find_secret(std::hint::black_box(text)));
            }
            println!(
                "{:>6.0} ns  {}",
                t.elapsed().as_nanos() as f64 / n as f64,
                &text[..20]
            );
        }
    }
}
