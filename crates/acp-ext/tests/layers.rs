//! The workspace's modules import one way: no two sibling modules of
//! either crate reach each other, directly or around a circle.
//!
//! Each `.rs` file is a module; every `crate::a::b` and `super::…::x` path
//! in its code (comments left out) is an edge to the sibling of the
//! lowest common parent that holds the target. A child using its parent
//! (`use super::*`) is no edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(root: &Path, file: &Path) -> (Module, bool) {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Module = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let dir_module = matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    );
    if dir_module {
        parts.pop();
    }
    (parts, dir_module)
}

/// The code of a file without its comments (docs name modules freely).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(s: &str) -> usize {
    s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len())
}

/// Every module path the code names, made absolute.
fn targets(me: &Module, code: &str) -> Vec<Module> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        if !code.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let (base, mut at) = if boundary && rest.starts_with("crate::") {
            (Vec::new(), i + "crate::".len())
        } else if boundary && rest.starts_with("super::") {
            let mut ups = 0;
            let mut j = i;
            while code[j..].starts_with("super::") {
                ups += 1;
                j += "super::".len();
            }
            (me[..me.len().saturating_sub(ups)].to_vec(), j)
        } else {
            i += 1;
            continue;
        };
        let mut path = base;
        loop {
            let n = ident(&code[at..]);
            if n == 0 {
                break;
            }
            path.push(code[at..at + n].to_owned());
            at += n;
            if code[at..].starts_with("::") {
                at += 2;
            } else {
                break;
            }
        }
        out.push(path);
        i = at.max(i + 1);
    }
    out
}

fn cycles(root: &Path) -> Vec<Vec<Module>> {
    let mut all = Vec::new();
    files(root, &mut all);
    let modules: BTreeSet<Module> = all.iter().map(|f| module_of(root, f).0).collect();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in &all {
        let (me, _) = module_of(root, file);
        let text = std::fs::read_to_string(file).unwrap();
        for target in targets(&me, &code(&text)) {
            let common = me.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common == me.len() || common == target.len() {
                continue;
            }
            let (from, to) = (me[..=common].to_vec(), target[..=common].to_vec());
            if modules.contains(&to) {
                graph.entry(from).or_default().insert(to);
            }
        }
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    fn visit(
        at: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        stack: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
        found: &mut Vec<Vec<Module>>,
    ) {
        if let Some(i) = stack.iter().position(|m| m == at) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(at.clone());
            found.push(cycle);
            return;
        }
        if !done.insert(at.clone()) {
            return;
        }
        stack.push(at.clone());
        for next in graph.get(at).into_iter().flatten() {
            visit(next, graph, stack, done, found);
        }
        stack.pop();
    }
    for start in graph.keys() {
        visit(start, &graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn show(cycle: &[Module]) -> String {
    cycle
        .iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[test]
fn no_module_of_either_crate_imports_around_a_circle() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The library's sources are beside these in the workspace (not in a
    // packaged `acp-ext`).
    let library = here.join("../acp-extension-core/src");
    let roots = [Some(here.join("src")), library.is_dir().then_some(library)];
    for root in roots.into_iter().flatten() {
        let found: Vec<String> = cycles(&root).iter().map(|c| show(c)).collect();
        assert!(found.is_empty(), "{}: {found:#?}", root.display());
    }
}

#[test]
fn the_checker_sees_a_circle_when_there_is_one() {
    let dir = std::env::temp_dir().join(format!("acp-ext-layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(dir.join("a/mod.rs"), "mod inner;\nuse super::b::X;\n").unwrap();
    std::fs::write(dir.join("a/inner.rs"), "use super::*;\n").unwrap();
    std::fs::write(
        dir.join("b.rs"),
        "// crate::a is named here only\npub struct X;\n",
    )
    .unwrap();
    assert!(cycles(&dir).is_empty());
    std::fs::write(dir.join("b.rs"), "pub struct X(crate::a::inner::Y);\n").unwrap();
    let found = cycles(&dir);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(found.len(), 1);
    assert_eq!(show(&found[0]), "a -> b -> a");
}
