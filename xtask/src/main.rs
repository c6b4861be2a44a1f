//! `cargo xtask`: repository tools for stepsched. `cargo xtask mutate`, the
//! ordering-mutation tool (see `HELP`, or `cargo xtask mutate --help`, and
//! CONTRIBUTING.md's "Ordering mutation"); `cargo xtask bench-report`, which
//! runs the peer benches and writes docs/benchmarks.md (see
//! [`bench_report`]).

mod bench_report;
mod checks;
mod history;
mod lex;
mod lists;
mod mutants;
mod scan;
mod tree;

use checks::{Outcome, Runner, Times};
use mutants::Mutant;
use scan::{Op, Ord, Site};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

const HELP: &str = "\
cargo xtask mutate: atomic-ordering mutation testing for stepsched.

For every atomic ordering and fence in src/ (not src/fuzzing/, tests.rs files
or #[cfg(test)] items) it makes mutants one step weaker: SeqCst->AcqRel for
RMWs (->Acquire for loads, ->Release for stores), AcqRel->Acquire and
->Release, Acquire->Relaxed, Release->Relaxed, a fence removed, and a
fetch_add(0, o) turned into a load. Each mutant is applied to a scratch copy
of the repository (target/mutate/tree; src/ is never edited), built, and
checked by the checks mapped to its file (loom models, integration tests in
release, optionally Miri; the table is `MAP` in xtask/src/checks.rs). Verdicts:
  killed    a check failed or hung past its timeout (the check is recorded)
  survived  every check passed: needs a new check, a weaker ordering in the
            code, or an entry in docs/proof/survivors.md
  listed    survived, and listed in docs/proof/survivors.md with its argument
  invalid   the mutant did not build
  unmapped  no check is mapped to the file (add a row to MAP)

USAGE:
  cargo xtask mutate --list [--file PREFIX]...
  cargo xtask mutate --list-relaxed [--check]
  cargo xtask mutate (--all | --sample N [--seed S] | --pin PATTERN...) [OPTIONS]

MODES:
  --list            print every mutant (id, key, checks) and the counts
  --list-relaxed    print the Relaxed stores/RMWs (the second rule's
                    candidates) with their status in docs/proof/relaxed.md
      --check       exit 1 if a candidate is missing from relaxed.md or an
                    entry there matches no candidate (stale)
      --strict      with --check: also exit 1 if an entry is still `todo:`
  --all             run every mutant (78 today: roughly 15-25 minutes on 2
                    shared cores, most of it building the scheduler's tests)
  --sample N        run N mutants drawn by a fixed PRNG from --seed (default 1)
  --pin PATTERN     always run the mutants whose key or id contains PATTERN
                    (repeatable; with neither --all nor --sample, run only
                    those); a pattern that matches nothing is an error

OPTIONS:
  --file PREFIX     only files whose path starts with PREFIX (repeatable)
  --out PATH        results file (default target/mutate/results.tsv); a run
                    starts it afresh unless --resume
  --resume          keep the results file and skip mutants already in it
  --timeout SECS    per-check timeout (default: loom 600, tests 300, Miri 1800);
                    a check past it kills the mutant (verdict says timeout)
  --miri            also run `cargo +nightly miri test --test deque_weak_memory`
                    (seeds 0..8) for the deque, `--lib mpsc::tests` for
                    the MPSC queue, and `--test sched_shutdown` for the
                    process table
  --no-baseline     skip running the checks once on the unmutated code first
  --dry-run         print the selected mutants and stop
  -v, --verbose     print each test as it runs

KEYS: a mutant's id is file:line:col:from->to (exact now, changes as lines
move); its key is file::Type::fn::receiver.method[/ok|/fail]#n:from->to, where
n counts identical calls earlier in the same fn. survivors.md, relaxed.md and
--resume use keys. Exit status: 0, or 1 if a mutant survived unlisted (or
--check failed), 2 on a usage error or a failing baseline.

The other command, `cargo xtask bench-report`, has its own --help.
";

struct Args {
    list: bool,
    list_relaxed: bool,
    check: bool,
    strict: bool,
    all: bool,
    sample: Option<usize>,
    seed: u64,
    pins: Vec<String>,
    files: Vec<String>,
    out: Option<PathBuf>,
    resume: bool,
    timeout: Option<Duration>,
    miri: bool,
    baseline: bool,
    dry_run: bool,
    verbose: bool,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        list: false,
        list_relaxed: false,
        check: false,
        strict: false,
        all: false,
        sample: None,
        seed: 1,
        pins: Vec::new(),
        files: Vec::new(),
        out: None,
        resume: false,
        timeout: None,
        miri: false,
        baseline: true,
        dry_run: false,
        verbose: false,
    };
    match it.next().as_deref() {
        Some("mutate") => {}
        Some("-h" | "--help") | None => return Err(String::new()),
        Some(other) => return Err(format!("unknown command `{other}`")),
    }
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--list" => a.list = true,
            "--list-relaxed" => a.list_relaxed = true,
            "--check" => a.check = true,
            "--strict" => a.strict = true,
            "--all" => a.all = true,
            "--sample" => {
                a.sample = Some(
                    value("--sample")?
                        .parse()
                        .map_err(|e| format!("--sample: {e}"))?,
                )
            }
            "--seed" => {
                a.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--pin" => a.pins.push(value("--pin")?),
            "--file" => a.files.push(value("--file")?),
            "--out" => a.out = Some(value("--out")?.into()),
            "--resume" => a.resume = true,
            "--timeout" => {
                let s: u64 = value("--timeout")?
                    .parse()
                    .map_err(|e| format!("--timeout: {e}"))?;
                a.timeout = Some(Duration::from_secs(s));
            }
            "--miri" => a.miri = true,
            "--no-baseline" => a.baseline = false,
            "--dry-run" => a.dry_run = true,
            "-v" | "--verbose" => a.verbose = true,
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root")
        .to_path_buf();
    let mut words = std::env::args().skip(1).peekable();
    match words.peek().map(String::as_str) {
        Some("bench-report") => {
            words.next();
            return ExitCode::from(bench_report::main(&root, words));
        }
        Some("no-history") => return ExitCode::from(history::main(&root)),
        _ => {}
    }
    let args = match parse(words) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("xtask: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let (sites, mutants) = scan_all(&root, &args.files);
    let code = if args.list_relaxed {
        list_relaxed(&root, &sites, args.check, args.strict)
    } else if args.list {
        list(&sites, &mutants, args.miri)
    } else {
        run(&root, &args, &sites, &mutants)
    };
    ExitCode::from(code)
}

/// The `.rs` files under `src/` that are mutated, sorted.
fn sources(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if p.is_dir() {
                if rel != "src/fuzzing" {
                    walk(&p, root, out);
                }
            } else if rel.ends_with(".rs") && !rel.ends_with("/tests.rs") {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root.join("src"), root, &mut out);
    out.sort();
    out
}

fn scan_all(root: &Path, files: &[String]) -> (Vec<Site>, Vec<Mutant>) {
    let mut sites = Vec::new();
    for file in sources(root) {
        if !files.is_empty() && !files.iter().any(|f| file.starts_with(f.as_str())) {
            continue;
        }
        let src = std::fs::read_to_string(root.join(&file)).expect("readable source");
        sites.extend(scan::scan(&file, &src));
    }
    let mutants = mutants::mutants(&sites);
    (sites, mutants)
}

fn list(sites: &[Site], mutants: &[Mutant], miri: bool) -> u8 {
    for m in mutants {
        let checks = checks::checks_for(&sites[m.site].file, miri);
        let checks = if checks.is_empty() {
            "UNMAPPED".to_string()
        } else {
            checks.join(",")
        };
        println!("{}\t{}\t{}", m.id, m.key, checks);
    }
    for s in sites.iter().filter(|s| s.op == Op::Other) {
        println!(
            "# not mutated (ordering passed to `{}`): {}:{} {}",
            s.method, s.file, s.line, s.key
        );
    }
    let mut by_op: BTreeMap<&str, usize> = BTreeMap::new();
    for s in sites {
        *by_op.entry(s.op.name()).or_default() += 1;
    }
    let mut by_file: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for s in sites {
        by_file.entry(&s.file).or_default().0 += 1;
    }
    for m in mutants {
        by_file.entry(&sites[m.site].file).or_default().1 += 1;
    }
    let with: HashSet<usize> = mutants.iter().map(|m| m.site).collect();
    let unmapped = mutants
        .iter()
        .filter(|m| checks::checks_for(&sites[m.site].file, false).is_empty())
        .count();
    println!("\n# per file: sites, mutants");
    for (f, (s, m)) in &by_file {
        println!("#   {f}: {s} sites, {m} mutants");
    }
    println!(
        "# {} sites ({}), {} with mutants (the rest are Relaxed, or not atomic calls); {} mutants ({} unmapped)",
        sites.len(),
        by_op.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", "),
        with.len(),
        mutants.len(),
        unmapped
    );
    0
}

fn list_relaxed(root: &Path, sites: &[Site], check: bool, strict: bool) -> u8 {
    let doc = root.join("docs/proof/relaxed.md");
    let listed = lists::relaxed(&doc);
    let candidates: Vec<&Site> = sites
        .iter()
        .filter(|s| s.ord == Ord::Relaxed && matches!(s.op, Op::Store | Op::Rmw))
        .collect();
    let keys: HashSet<&str> = candidates.iter().map(|s| s.key.as_str()).collect();
    let (mut missing, mut todo) = (0, 0);
    for s in &candidates {
        let status = match listed.get(&s.key) {
            Some(lists::Relaxed::Model) => "model",
            Some(lists::Relaxed::Unshared) => "unshared",
            Some(lists::Relaxed::Todo) => {
                todo += 1;
                "todo"
            }
            None => {
                missing += 1;
                "MISSING"
            }
        };
        println!(
            "{status:<9}{}\t{}:{}\t{}",
            s.key, s.file, s.line, s.line_text
        );
    }
    let mut stale: Vec<&String> = listed
        .keys()
        .filter(|k| !keys.contains(k.as_str()))
        .collect();
    stale.sort();
    for k in &stale {
        println!("STALE    {k}\t(in relaxed.md, but no such Relaxed store/RMW)");
    }
    println!(
        "# {} Relaxed stores/RMWs: {} missing from docs/proof/relaxed.md, {} todo, {} stale entries",
        candidates.len(),
        missing,
        todo,
        stale.len()
    );
    u8::from(check && (missing > 0 || !stale.is_empty() || (strict && todo > 0)))
}

/// A small deterministic PRNG (SplitMix64) for `--sample`.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The mutants a run covers, in source order.
fn select<'a>(args: &Args, mutants: &'a [Mutant]) -> Result<Vec<&'a Mutant>, String> {
    let mut chosen = vec![false; mutants.len()];
    for pin in &args.pins {
        let mut hit = false;
        for (i, m) in mutants.iter().enumerate() {
            if m.key.contains(pin.as_str()) || m.id.contains(pin.as_str()) {
                chosen[i] = true;
                hit = true;
            }
        }
        if !hit {
            return Err(format!("--pin `{pin}` matches no mutant (see --list)"));
        }
    }
    if args.all {
        chosen.iter_mut().for_each(|c| *c = true);
    } else if let Some(n) = args.sample {
        let mut pool: Vec<usize> = (0..mutants.len()).filter(|&i| !chosen[i]).collect();
        let mut state = args.seed;
        for _ in 0..n.min(pool.len()) {
            let pick = (splitmix(&mut state) % pool.len() as u64) as usize;
            chosen[pool.swap_remove(pick)] = true;
        }
    } else if args.pins.is_empty() {
        return Err("choose --all, --sample N or --pin PATTERN (or --list)".into());
    }
    Ok(mutants
        .iter()
        .zip(chosen)
        .filter(|(_, c)| *c)
        .map(|(m, _)| m)
        .collect())
}

fn run(root: &Path, args: &Args, sites: &[Site], mutants: &[Mutant]) -> u8 {
    let selected = match select(args, mutants) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xtask: {e}");
            return 2;
        }
    };
    let out_dir = root.join("target/mutate");
    let results = args.out.clone().unwrap_or(out_dir.join("results.tsv"));
    let _ = std::fs::create_dir_all(&out_dir);
    if !args.resume {
        let _ = std::fs::remove_file(&results);
    }
    let done = lists::recorded(&results);
    let todo: Vec<&Mutant> = selected
        .into_iter()
        .filter(|m| !done.contains_key(&m.key))
        .collect();
    if args.dry_run {
        for m in &todo {
            println!(
                "{}\t{}\t{}",
                m.id,
                m.key,
                checks::checks_for(&sites[m.site].file, args.miri).join(",")
            );
        }
        println!(
            "# {} mutants selected ({} already recorded)",
            todo.len(),
            done.len()
        );
        return 0;
    }
    let listed = lists::survivors(&root.join("docs/proof/survivors.md"));
    let tree = out_dir.join("tree");
    match tree::sync(root, &tree) {
        Ok(n) => eprintln!(
            "mutate: scratch tree {} ({n} files refreshed)",
            tree.display()
        ),
        Err(e) => {
            eprintln!(
                "xtask: cannot copy the repository to {}: {e}",
                tree.display()
            );
            return 2;
        }
    }
    let mut runner = Runner::new(tree.clone(), out_dir.clone(), args.timeout, args.verbose);
    if args.baseline {
        let mut all: Vec<String> = Vec::new();
        for m in &todo {
            for c in checks::checks_for(&sites[m.site].file, args.miri) {
                if !all.contains(&c) {
                    all.push(c);
                }
            }
        }
        eprintln!("mutate: baseline (unmutated): {}", all.join(", "));
        let mut times = Times::default();
        match runner.run(&all, &mut times) {
            Outcome::Passed => eprintln!(
                "mutate: baseline passed (build {:.0}s, checks {:.0}s)",
                times.build, times.check
            ),
            Outcome::Failed { check, detail } => {
                eprintln!("xtask: baseline failed: {check}: {detail}\n(fix the code or the check first: every mutant would count as killed)");
                return 2;
            }
            Outcome::BuildError(e) => {
                eprintln!("xtask: baseline does not build: {e}");
                return 2;
            }
        }
    }
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let mut bad: Vec<String> = Vec::new();
    let mut listed_killed: Vec<String> = Vec::new();
    for (n, m) in todo.iter().enumerate() {
        let site = &sites[m.site];
        let path = tree.join(&site.file);
        let original = std::fs::read_to_string(&path).expect("scratch tree file");
        let mutated = mutants::apply(&original, m);
        let mutant_line = mutated
            .lines()
            .nth(site.line - 1)
            .unwrap_or("")
            .trim()
            .to_string();
        let checks = checks::checks_for(&site.file, args.miri);
        let mut times = Times::default();
        let (verdict, check, detail) = if checks.is_empty() {
            ("unmapped", String::new(), String::new())
        } else {
            let guard = tree::Mutation::apply(path, original, &mutated).expect("write the mutant");
            let outcome = runner.run(&checks, &mut times);
            drop(guard);
            match outcome {
                Outcome::Passed if listed.contains(&m.key) => {
                    ("listed", String::new(), String::new())
                }
                Outcome::Passed => ("survived", String::new(), String::new()),
                Outcome::Failed { check, detail } => ("killed", check, detail),
                Outcome::BuildError(e) => ("invalid", String::new(), e),
            }
        };
        if verdict == "survived" {
            bad.push(m.key.clone());
        }
        if verdict == "killed" && listed.contains(&m.key) {
            listed_killed.push(m.key.clone());
        }
        *tally.entry(verdict).or_default() += 1;
        eprintln!(
            "[{}/{}] {verdict:<8} {}  (build {:.1}s, checks {:.1}s){}",
            n + 1,
            todo.len(),
            m.id,
            times.build,
            times.check,
            if check.is_empty() {
                String::new()
            } else {
                format!("  by {check}")
            }
        );
        let row = lists::Row {
            id: &m.id,
            key: &m.key,
            verdict,
            check: &check,
            build: times.build,
            check_secs: times.check,
            original: &site.line_text,
            mutant: &mutant_line,
            detail: &detail,
        };
        if let Err(e) = lists::append(&results, &row) {
            eprintln!("xtask: cannot write {}: {e}", results.display());
        }
    }
    summary(&results, &tally, &bad, &listed_killed);
    u8::from(!bad.is_empty())
}

fn summary(
    results: &Path,
    tally: &BTreeMap<&str, usize>,
    bad: &[String],
    listed_killed: &[String],
) {
    let get = |k: &str| tally.get(k).copied().unwrap_or(0);
    let total: usize = tally.values().sum();
    println!(
        "mutants {total}: killed {}, survived {}, listed {}, invalid {}, unmapped {}",
        get("killed"),
        get("survived"),
        get("listed"),
        get("invalid"),
        get("unmapped")
    );
    let all = lists::recorded(results);
    if all.len() > total {
        let count = |v: &str| all.values().filter(|x| x.as_str() == v).count();
        println!(
            "results file ({} mutants): killed {}, survived {}, listed {}, invalid {}, unmapped {}",
            all.len(),
            count("killed"),
            count("survived"),
            count("listed"),
            count("invalid"),
            count("unmapped")
        );
    }
    for k in bad {
        println!("SURVIVED {k}");
    }
    for k in listed_killed {
        println!("note: {k} is listed in survivors.md but was killed: remove its entry");
    }
    println!("results: {}", results.display());
}
