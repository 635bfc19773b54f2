use ctxkit_memory::secrets::{find_secret, redact};
fn main() {
    let text = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let line = line.replace("\\n", "\n");
        match find_secret(&line) {
            Some(f) => println!("HIT  {:<28} {}", f.rule, redact(&line).replace('\n', "⏎")),
            None => println!("MISS {:<28} {}", "", line.replace('\n', "⏎")),
        }
    }
}
