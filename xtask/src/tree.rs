//! The scratch copy of the repository that mutants are applied to.
//!
//! Mutants are never written into the real `src/`: the tool copies the
//! workspace (everything but `target/` and `.git/`) to
//! `target/mutate/tree` and edits files there. [`sync`] runs at the start of
//! every run and makes the copy equal to the repository again (rewriting
//! only files whose content differs, so cargo's fingerprints stay valid), so
//! even a run killed in the middle of a mutant (Ctrl-C, `kill -9`) leaves
//! nothing behind that matters: the next run repairs the copy. Within a
//! run, [`Mutation`] restores the file when dropped, including when a panic
//! unwinds through it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Directories never copied (relative to the root).
const SKIP: &[&str] = &[
    "target",
    ".git",
    "fuzz/target",
    "fuzz/corpus",
    "fuzz/artifacts",
];

/// Makes `tree` a copy of `root`: copies new and changed files, removes
/// files that no longer exist in `root`. Returns how many files it wrote.
pub fn sync(root: &Path, tree: &Path) -> io::Result<usize> {
    fs::create_dir_all(tree)?;
    let mut wrote = 0;
    copy_dir(root, root, tree, &mut wrote)?;
    prune(root, tree, tree)?;
    Ok(wrote)
}

fn skipped(root: &Path, path: &Path) -> bool {
    let rel = path.strip_prefix(root).unwrap_or(path);
    SKIP.iter().any(|s| rel == Path::new(s))
}

fn copy_dir(root: &Path, dir: &Path, tree: &Path, wrote: &mut usize) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if skipped(root, &path) {
            continue;
        }
        let dest = tree.join(path.strip_prefix(root).expect("under root"));
        let ty = entry.file_type()?;
        if ty.is_dir() {
            fs::create_dir_all(&dest)?;
            copy_dir(root, &path, tree, wrote)?;
        } else if ty.is_file() {
            let data = fs::read(&path)?;
            if fs::read(&dest).ok().as_deref() != Some(&data[..]) {
                fs::write(&dest, &data)?;
                *wrote += 1;
            }
        }
    }
    Ok(())
}

fn prune(root: &Path, tree: &Path, dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let rel = path.strip_prefix(tree).expect("under tree");
        if SKIP.iter().any(|s| rel == Path::new(s)) {
            continue;
        }
        let source = root.join(rel);
        if entry.file_type()?.is_dir() {
            if source.is_dir() {
                prune(root, tree, &path)?;
            } else {
                fs::remove_dir_all(&path)?;
            }
        } else if !source.exists() {
            fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// A mutated file in the tree; dropping it writes the original back.
pub struct Mutation {
    path: PathBuf,
    original: String,
}

impl Mutation {
    /// Writes `mutated` over `path` (whose real content is `original`).
    pub fn apply(path: PathBuf, original: String, mutated: &str) -> io::Result<Mutation> {
        let guard = Mutation { path, original };
        fs::write(&guard.path, mutated)?;
        Ok(guard)
    }
}

impl Drop for Mutation {
    fn drop(&mut self) {
        if let Err(e) = fs::write(&self.path, &self.original) {
            // The next run's `sync` repairs it; say so loudly.
            eprintln!(
                "mutate: could not restore {} in the scratch tree ({e}); the next run repairs it",
                self.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_copies_restores_and_prunes() {
        let base = std::env::temp_dir().join(format!("xtask-tree-{}", std::process::id()));
        let (root, tree) = (base.join("root"), base.join("tree"));
        fs::create_dir_all(root.join("src")).unwrap();
        fs::create_dir_all(root.join("target")).unwrap();
        fs::write(root.join("src/a.rs"), "a").unwrap();
        fs::write(root.join("target/junk"), "x").unwrap();
        assert_eq!(sync(&root, &tree).unwrap(), 1);
        assert!(!tree.join("target").exists());
        {
            let _m = Mutation::apply(tree.join("src/a.rs"), "a".into(), "b").unwrap();
            assert_eq!(fs::read_to_string(tree.join("src/a.rs")).unwrap(), "b");
        }
        assert_eq!(fs::read_to_string(tree.join("src/a.rs")).unwrap(), "a");
        fs::write(tree.join("src/a.rs"), "left mutated by a crash").unwrap();
        fs::write(tree.join("src/stale.rs"), "gone from root").unwrap();
        assert_eq!(sync(&root, &tree).unwrap(), 1);
        assert_eq!(fs::read_to_string(tree.join("src/a.rs")).unwrap(), "a");
        assert!(!tree.join("src/stale.rs").exists());
        fs::remove_dir_all(&base).unwrap();
    }
}
