//! Mutations of JSON texts for the tests that hold two readings of the
//! same bytes to one verdict: structural edits that a `Value` cannot
//! write (repeated keys, escaped key spellings, reordered keys) and
//! byte-level edits.

use serde_json::Value;

/// A JSON tree that keeps duplicate keys and key order, to write inputs
/// that `serde_json::Value` cannot hold.
#[derive(Clone, Debug)]
pub enum J {
    Raw(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn from_value(v: &Value) -> J {
        match v {
            Value::Array(items) => J::Arr(items.iter().map(J::from_value).collect()),
            Value::Object(obj) => J::Obj(
                obj.iter()
                    .map(|(k, v)| (k.clone(), J::from_value(v)))
                    .collect(),
            ),
            other => J::Raw(other.to_string()),
        }
    }

    fn write(&self, out: &mut String) {
        match self {
            J::Raw(s) => out.push_str(s),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            J::Obj(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::from(k.as_str()).to_string());
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    /// Every node, as a path of child indices.
    fn paths(&self, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        out.push(at.clone());
        let children: Vec<&J> = match self {
            J::Raw(_) => return,
            J::Arr(items) => items.iter().collect(),
            J::Obj(entries) => entries.iter().map(|(_, v)| v).collect(),
        };
        for (i, c) in children.into_iter().enumerate() {
            at.push(i);
            c.paths(at, out);
            at.pop();
        }
    }

    fn at_mut(&mut self, path: &[usize]) -> &mut J {
        match path.split_first() {
            None => self,
            Some((&i, rest)) => match self {
                J::Arr(items) => items[i].at_mut(rest),
                J::Obj(entries) => entries[i].1.at_mut(rest),
                J::Raw(_) => unreachable!(),
            },
        }
    }
}

/// The entries of an object.
pub type Entries = Vec<(String, J)>;

/// Values a field is replaced with: wrong types, nulls, the number edge
/// cases (`1.0`, `1e400`, `-0`, beyond 2^53), strings with escapes and lone
/// surrogates, variant indices, deep nesting.
pub fn replacements() -> Vec<String> {
    let mut r: Vec<String> = [
        "null",
        "true",
        "false",
        "0",
        "1",
        "2",
        "4",
        "5",
        "1.0",
        "1.5",
        "-1",
        "-0",
        "-0.0",
        "1e400",
        "-1e400",
        "1e-400",
        "9007199254740991",
        "9007199254740993",
        "18446744073709551616",
        "\"\"",
        "\"x\"",
        "\"text\"",
        "\"t\\u0065xt\"",
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "\"\\ud83d\\ude00\"",
        "\"a\\nb\"",
        "[]",
        "[null]",
        "[\"text\"]",
        "{}",
        "{\"a\":1e400}",
        "{\"a\":\"\\ud800\"}",
        "{\"type\":\"text\",\"text\":\"x\"}",
        "{\"type\":0,\"text\":\"x\"}",
        "{\"text\":\"x\",\"type\":\"text\"}",
        "{\"type\":\"text\",\"type\":\"text\",\"text\":\"x\"}",
        "{\"type\":\"content\",\"content\":{\"type\":0,\"text\":\"x\"}}",
        "{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":null,\"text\":\"x\"}}",
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"u\",\"text\":\"t\",\"text\":5}}",
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"u\",\"text\":5,\"blob\":\"b\"}}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    r.push(format!("{}{}", "[".repeat(200), "]".repeat(200)));
    r.push(format!("{}{}", "[".repeat(120), "]".repeat(120)));
    r
}

/// Structural mutations of `j`: each node replaced (by `per_node` of the
/// replacements, a different few for each node and `seed`), each key
/// dropped, duplicated, moved to the front or back and spelled with an
/// escape, unknown keys added.
pub fn mutations(j: &J, seed: usize, per_node: usize, out: &mut Vec<String>) {
    let reps = replacements();
    let mut paths = Vec::new();
    j.paths(&mut Vec::new(), &mut paths);
    for (n, path) in paths.iter().enumerate() {
        for r in 0..per_node.min(reps.len()) {
            let rep = &reps[(seed * 13 + n * 7 + r * 11) % reps.len()];
            let mut m = j.clone();
            *m.at_mut(path) = J::Raw(rep.clone());
            out.push(m.text());
        }
        let node = j.clone().at_mut(path).clone();
        if let J::Obj(entries) = node {
            for i in 0..entries.len() {
                let edit = |f: &dyn Fn(&mut Entries)| {
                    let mut m = j.clone();
                    if let J::Obj(e) = m.at_mut(path) {
                        f(e);
                    }
                    m.text()
                };
                out.push(edit(&|e| {
                    e.remove(i);
                }));
                out.push(edit(&|e| {
                    let dup = (e[i].0.clone(), J::Raw("null".into()));
                    e.insert(i, dup);
                }));
                out.push(edit(&|e| {
                    let dup = e[i].clone();
                    e.push(dup);
                }));
                out.push(edit(&|e| {
                    let moved = e.remove(i);
                    e.insert(0, moved);
                }));
                out.push(edit(&|e| {
                    let moved = e.remove(i);
                    e.push(moved);
                }));
                out.push(edit(&|e| {
                    let (k, _) = e[i].clone();
                    let escaped = k.replacen('e', "\\u0065", 1);
                    if escaped != k {
                        // An escaped spelling of the same key (written raw below).
                        e[i].0 = format!("\u{1}{escaped}");
                    }
                }));
            }
            let mut m = j.clone();
            if let J::Obj(e) = m.at_mut(path) {
                e.insert(0, ("zzUnknown".into(), J::Raw("[1,{\"a\":null}]".into())));
            }
            out.push(m.text());
        }
    }
}

/// Byte-level mutations of `text`: deletions, insertions and replacements
/// with bytes that matter to JSON, at a spread of positions (a different
/// few bytes at each position and `seed`).
pub fn byte_mutations(text: &str, seed: usize, out: &mut Vec<Vec<u8>>) {
    let bytes = text.as_bytes();
    let specials: &[&[u8]] = &[
        b"\"", b"{", b"}", b"[", b"]", b",", b":", b"0", b"-", b"e", b"n", b"\\", b" ", b"\xff",
        b"\xc3", b"\x01", b"\\u0000", b"\\ud800", b"1e999", b"\"\"", b"null",
    ];
    let step = (bytes.len() / 16).max(1);
    for (p, i) in (0..bytes.len()).step_by(step).enumerate() {
        let mut del = bytes.to_vec();
        del.remove(i);
        out.push(del);
        for r in 0..3 {
            let s = specials[(seed * 5 + p * 3 + r * 7) % specials.len()];
            let mut rep = bytes.to_vec();
            rep.splice(i..i + 1, s.iter().copied());
            out.push(rep);
            let mut ins = bytes.to_vec();
            ins.splice(i..i, s.iter().copied());
            out.push(ins);
        }
    }
    let mut trailing = bytes.to_vec();
    trailing.extend_from_slice(b" {}");
    out.push(trailing);
    let mut ws = b" \t\r\n".to_vec();
    ws.extend_from_slice(bytes);
    ws.extend_from_slice(b"\n ");
    out.push(ws);
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(bytes);
    out.push(bom);
    out.push(bytes[..bytes.len() / 2].to_vec());
}

/// Turns the raw-key marker of [`mutations`] into an unescaped write.
pub fn finish(text: String) -> Vec<u8> {
    text.replace("\"\\u0001", "\"")
        .replace("\\\\u0065", "\\u0065")
        .into_bytes()
}
