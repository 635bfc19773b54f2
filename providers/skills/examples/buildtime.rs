use ctxkit_skills::{SelectOptions, SkillIndex, SkillRoot, Source};
fn main() {
    let index = SkillIndex::load(&[SkillRoot::new("/work/shared/corpora", Source::Project)]);
    let o = SelectOptions {
        by_description: std::env::var("OFF").is_err(),
        ..SelectOptions::default()
    };
    let t = std::time::Instant::now();
    let _ = index.select(&["deploy the app to kubernetes"], &[], &o);
    println!("first select (builds the ranker): {:?}", t.elapsed());
    let t = std::time::Instant::now();
    for _ in 0..1000 {
        let _ = index.select(
            &["deploy the app to kubernetes with helm and roll back on failure"],
            &[],
            &o,
        );
    }
    println!("warm select: {:?}", t.elapsed() / 1000);
}
