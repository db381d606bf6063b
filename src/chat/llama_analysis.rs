//! The reasoning markers llama.cpp v0.5.0's differential analysis finds in a template
//! (`autoparser::analyze_reasoning` and the workarounds that adjust it, common/chat-diff-analyzer.cpp):
//! the template rendered over pairs of probe conversations that differ in one thing (a reasoning
//! message, `enable_thinking`, a tool call), the outputs split into markers (`<...>`, `[...]`)
//! and text, and the markers around the probe's reasoning read off. llama.cpp writes these
//! markers around a continued message (`continue_final_message`).

use super::llama_caps::Caps;
use super::template::Compiled;

const FUN_FIRST: &str = "FFF_FIRST_FUN_F";
const FUN_SECOND: &str = "SSS_SECOND_FUN_S";
const ARG_FIRST: &str = "AA_ARG_FST_AA";
const ARG_SECOND: &str = "BB_ARG_SND_BB";
const USER_MSG: &str = "U_USER_MSG Hello END_U";
const ASSISTANT_MSG: &str = "A_ASST_MSG I can help END_A";
const THINKING_CONTENT: &str = "REASON_PART I am thinking END_R";

/// The reasoning markers found (each empty when none is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reasoning {
    pub start: String,
    pub end: String,
}

/// C's `isspace` in the "C" locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// llama.cpp's `trim_whitespace`.
fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_space(b)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| !is_space(b))
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// `reasoning_mode`, as far as the workarounds read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    None,
    Tag,
    ToolsOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Marker,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment<'a> {
    kind: Kind,
    value: &'a [u8],
}

/// llama.cpp's `segmentize_markers`: `<...>` and `[...]` are markers, the rest text.
fn segmentize(text: &[u8]) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut opener = None;
    let mut last = 0;
    for (i, &c) in text.iter().enumerate() {
        match opener {
            None if c == b'<' || c == b'[' => {
                if last < i {
                    out.push(Segment {
                        kind: Kind::Text,
                        value: &text[last..i],
                    });
                }
                last = i;
                opener = Some(c);
            }
            Some(o) if (o == b'<' && c == b'>') || (o == b'[' && c == b']') => {
                out.push(Segment {
                    kind: Kind::Marker,
                    value: &text[last..=i],
                });
                last = i + 1;
                opener = None;
            }
            _ => {}
        }
    }
    if last < text.len() {
        out.push(Segment {
            kind: Kind::Text,
            value: &text[last..],
        });
    }
    out
}

fn prune(segments: Vec<Segment<'_>>) -> Vec<Segment<'_>> {
    segments
        .into_iter()
        .filter(|s| !trim(s.value).is_empty())
        .collect()
}

/// The part of two outputs that differs (`diff_split`'s `left` and `right`).
#[derive(Debug, Default)]
struct Diff {
    left: Vec<u8>,
    right: Vec<u8>,
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

fn concat(segs: &[Segment<'_>]) -> Vec<u8> {
    segs.iter().flat_map(|s| s.value.iter().copied()).collect()
}

/// llama.cpp's `calculate_diff_split`, segment by segment from both ends, then byte by byte.
fn diff_split(left: &[u8], right: &[u8]) -> Diff {
    let ls = segmentize(left);
    let rs = segmentize(right);
    if ls.is_empty() {
        return Diff {
            left: Vec::new(),
            right: right.to_vec(),
        };
    }
    if rs.is_empty() {
        return Diff {
            left: left.to_vec(),
            right: Vec::new(),
        };
    }
    let (mut l0, mut l1, mut r0, mut r1) = (0usize, ls.len() - 1, 0usize, rs.len() - 1);
    let (mut left_done, mut right_done) = (false, false);
    while l0 != l1 && r0 != r1 {
        let mut advanced = false;
        if ls[l0] == rs[r0] {
            l0 += 1;
            r0 += 1;
            advanced = true;
        }
        if ls[l1] == rs[r1] {
            if l0 != l1 {
                l1 -= 1;
            } else {
                left_done = true;
            }
            if r0 != r1 {
                r1 -= 1;
            } else {
                right_done = true;
            }
            advanced = true;
        }
        if !advanced {
            break;
        }
    }
    if l0 == l1 && r0 != r1 {
        if ls[l0] == rs[r1] {
            r1 -= 1;
            left_done = true;
        } else if ls[l0] == rs[r0] {
            r0 += 1;
            left_done = true;
        }
    } else if r0 == r1 && l0 != l1 {
        if ls[l1] == rs[r0] {
            l1 -= 1;
            right_done = true;
        } else if ls[l0] == rs[r0] {
            l0 += 1;
            right_done = true;
        }
    } else if l0 == l1 && r0 == r1 && ls[l0] == rs[r0] && ls[l0].kind == Kind::Marker {
        left_done = true;
        right_done = true;
    }
    let text_suffix = ls[l1].kind == Kind::Text && rs[r1].kind == Kind::Text;
    let text_prefix = rs[r0].kind == Kind::Text && ls[l0].kind == Kind::Text;
    let rest_left = concat(&ls[l0..if left_done { l1 } else { l1 + 1 }]);
    let rest_right = concat(&rs[r0..if right_done { r1 } else { r1 + 1 }]);
    let suffix = if text_suffix {
        common_suffix(&rest_left, &rest_right)
    } else {
        0
    };
    let prefix = if text_prefix {
        common_prefix(
            &rest_left[..rest_left.len() - suffix],
            &rest_right[..rest_right.len() - suffix],
        )
    } else {
        0
    };
    let mut d = Diff {
        left: rest_left[prefix..rest_left.len() - suffix].to_vec(),
        right: rest_right[prefix..rest_right.len() - suffix].to_vec(),
    };
    if d.left.is_empty() && !d.right.is_empty() && right.starts_with(left) {
        d.right = right[left.len()..].to_vec();
    }
    d
}

/// The PEG builder's `space()`: any C whitespace.
fn space(s: &[u8], i: usize) -> usize {
    i + s[i..].iter().take_while(|&&b| is_space(b)).count()
}

/// The PEG builder's `marker()`: `<` up to the next `>`, or `[` up to the next `]`.
fn marker(s: &[u8], i: usize) -> Option<usize> {
    let close = match s.get(i)? {
        b'<' => b'>',
        b'[' => b']',
        _ => return None,
    };
    s[i + 1..]
        .iter()
        .position(|&b| b == close)
        .map(|p| i + 1 + p + 1)
}

/// `tag("pre", marker + space) + literal + [space] + tag("post", [space] + marker + space)`,
/// tried at each position: the tags' text at the first that matches. `inner_space` puts the
/// space after the literal inside the post tag (the presence probe) or outside (the scope
/// probe).
fn wrapped<'a>(s: &'a [u8], lit: &[u8], inner_space: bool) -> Option<(&'a [u8], &'a [u8])> {
    for i in 0..s.len() {
        let Some(m) = marker(s, i) else { continue };
        let a = space(s, m);
        if !s[a..].starts_with(lit) {
            continue;
        }
        let b = a + lit.len();
        let c = space(s, b);
        let Some(d) = marker(s, c) else { continue };
        let e = space(s, d);
        let post_from = if inner_space { b } else { c };
        return Some((&s[i..a], &s[post_from..e]));
    }
    None
}

/// `literal + space + optional(tag("post", marker + space))` at the literal's first place: the
/// post tag's text (empty when no marker follows).
fn delimited<'a>(s: &'a [u8], lit: &[u8]) -> Option<&'a [u8]> {
    let i = s.windows(lit.len().max(1)).position(|w| w == lit)?;
    let c = space(s, i + lit.len());
    Some(match marker(s, c) {
        Some(d) => &s[c..space(s, d)],
        None => &s[c..c],
    })
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn string(s: &str) -> String {
    let mut out = String::new();
    super::python::json_string(&mut out, s, false);
    out
}

/// Renders probe messages as llama.cpp's `apply_template` does (`direct_apply`, no
/// extra variables, string contents as parts where the template reads only parts).
struct Prober<'a> {
    t: &'a Compiled,
    only_typed: bool,
}

impl Prober<'_> {
    fn content(&self, s: &str) -> String {
        if self.only_typed {
            format!(r#"[{{"type": "text", "text": {}}}]"#, string(s))
        } else {
            string(s)
        }
    }

    fn message(&self, role: &str, content: Option<&str>, rest: &str) -> String {
        let c = content.map_or_else(|| "null".to_string(), |c| self.content(c));
        format!(r#"{{"role": "{role}", "content": {c}{rest}}}"#)
    }

    fn render(
        &self,
        messages: &[String],
        tools: bool,
        agp: bool,
        thinking: bool,
    ) -> Option<Vec<u8>> {
        let tools = if tools {
            let f = |name: &str, what: &str| {
                format!(
                    r#"{{"type": "function", "function": {{"name": "{name}", "description": "Test function {what}", "parameters": {{"type": "object", "properties": {{"{ARG_FIRST}": {{"type": "string", "description": "First argument"}}, "{ARG_SECOND}": {{"type": "string", "description": "Second argument"}}}}, "required": []}}}}}}"#
                )
            };
            format!(
                r#", "tools": [{}, {}]"#,
                f(FUN_FIRST, "foo"),
                f(FUN_SECOND, "bar")
            )
        } else {
            String::new()
        };
        let agp = if agp {
            r#", "add_generation_prompt": true"#
        } else {
            ""
        };
        let request = format!(
            r#"{{"messages": [{}], "bos_token": "", "eos_token": "", "enable_thinking": {thinking}{tools}{agp}}}"#,
            messages.join(", ")
        );
        self.t
            .render(request.as_bytes(), &[], true)
            .ok()
            .map(String::into_bytes)
    }
}

/// What llama.cpp's `analyze_reasoning` (and its reasoning workarounds) find in a template.
pub fn reasoning(t: &Compiled, caps: &Caps) -> Reasoning {
    let p = Prober {
        t,
        only_typed: !caps.supports_string_content && caps.supports_typed_content,
    };
    let lit = THINKING_CONTENT.as_bytes();
    let user = p.message("user", Some(USER_MSG), "");
    let (mut start, mut end, mut mode) = (Vec::new(), Vec::new(), Mode::None);

    // compare_reasoning_presence
    let plain = p.message("assistant", Some(ASSISTANT_MSG), "");
    let reasoned = p.message(
        "assistant",
        Some(ASSISTANT_MSG),
        &format!(r#", "reasoning_content": {}"#, string(THINKING_CONTENT)),
    );
    if let (Some(a), Some(b)) = (
        p.render(&[user.clone(), plain], false, false, true),
        p.render(&[user.clone(), reasoned.clone()], false, false, true),
    ) {
        let d = diff_split(&a, &b);
        if !d.right.is_empty() && d.right.windows(lit.len()).any(|w| w == lit) {
            if let Some((pre, post)) = wrapped(&b, lit, true) {
                if !pre.is_empty() && !post.is_empty() {
                    mode = Mode::Tag;
                    start = pre.to_vec();
                    end = post.to_vec();
                }
            } else if let Some(post) = delimited(&b, lit) {
                if !post.is_empty() {
                    mode = Mode::Tag;
                    end = post.to_vec();
                }
            }
        }
    }

    // compare_thinking_enabled
    if let (Some(a), Some(b)) = (
        p.render(std::slice::from_ref(&user), false, true, false),
        p.render(std::slice::from_ref(&user), false, true, true),
    ) {
        let d = diff_split(&a, &b);
        let (lt, rt) = (trim(&d.left), trim(&d.right));
        if lt.is_empty() && !d.right.is_empty() {
            if !rt.is_empty() && b.ends_with(rt) && start.is_empty() {
                start = d.right.clone();
                mode = Mode::Tag;
            }
        } else if rt.is_empty() && !d.left.is_empty() {
            if !lt.is_empty() && a.ends_with(lt) && end.is_empty() {
                let seg = prune(segmentize(&a));
                if seg.len() >= 2
                    && seg[seg.len() - 1].value == lt
                    && seg[seg.len() - 2].kind == Kind::Marker
                {
                    start = seg[seg.len() - 2].value.to_vec();
                }
                end = d.left.clone();
                mode = Mode::Tag;
            }
        } else if !lt.is_empty() && !rt.is_empty() {
            for (base, extended) in [(&b, &a), (&a, &b)] {
                let len = base.len().min(64);
                let anchor = &base[base.len() - len..];
                let Some(pos) = rfind(extended, anchor) else {
                    continue;
                };
                if pos + len >= extended.len() {
                    continue;
                }
                let extra = trim(&extended[pos + len..]);
                if extra.is_empty() {
                    continue;
                }
                let seg = prune(segmentize(extra));
                if seg.len() == 2 && seg[0].kind == Kind::Marker && seg[1].kind == Kind::Marker {
                    if start.is_empty() {
                        start = seg[0].value.to_vec();
                    }
                    if end.is_empty() {
                        end = seg[1].value.to_vec();
                    }
                    mode = Mode::Tag;
                    break;
                }
            }
        }
        if mode == Mode::None && start.is_empty() && !end.is_empty() {
            mode = Mode::Tag;
        }
    }

    // compare_reasoning_scope
    if caps.supports_tool_calls {
        let call = format!(
            r#", "reasoning_content": {}, "tool_calls": [{{"id": "call00001", "type": "function", "function": {{"name": "{FUN_FIRST}", "arguments": {{"{ARG_FIRST}": "VVVV", "{ARG_SECOND}": "XXXX"}}}}}}]"#,
            string(THINKING_CONTENT)
        );
        let with_tools = p.message("assistant", None, &call);
        if let (Some(a), Some(b)) = (
            p.render(&[user.clone(), reasoned], true, false, true),
            p.render(&[user, with_tools], true, false, true),
        ) {
            let has = |s: &[u8]| s.windows(lit.len()).any(|w| w == lit);
            if !has(&a) && has(&b) {
                mode = Mode::ToolsOnly;
                if let Some((pre, post)) = wrapped(&b, lit, false) {
                    start = pre.to_vec();
                    end = post.to_vec();
                } else if let Some(post) = delimited(&b, lit) {
                    end = post.to_vec();
                } else {
                    mode = Mode::None;
                }
            }
        }
    }

    let src = t.source.as_str();
    let mut r = Reasoning {
        start: text(&start),
        end: text(&end),
    };
    // The workarounds that set reasoning markers.
    if src.contains("content.split('</think>')")
        && !src.contains("reasoning_content")
        && !src.contains("<SPECIAL_12>")
        && mode == Mode::None
    {
        r = think("<think>");
    }
    if src.contains(
        "Write your thoughts between <think></think> and write your response between <response></response>",
    ) {
        r = think("<think>");
    }
    if src.contains("<SPECIAL_10>")
        && src.contains("<SPECIAL_11>")
        && src.contains("<SPECIAL_12>")
        && src.contains("<TOOL_RESPONSE>")
    {
        r = think("<think>\n");
    }
    if src.contains("laguna_glm_thinking") {
        r.start = text(trim(r.start.as_bytes()));
        r.end = text(trim(r.end.as_bytes()));
    }
    r
}

fn think(start: &str) -> Reasoning {
    Reasoning {
        start: start.to_string(),
        end: "</think>".to_string(),
    }
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| &hay[i..i + needle.len()] == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_markers_from_text() {
        let s = segmentize(b"a<b>c[d]e<f");
        let v: Vec<_> = s.iter().map(|s| (s.kind, s.value)).collect();
        assert_eq!(
            v,
            vec![
                (Kind::Text, &b"a"[..]),
                (Kind::Marker, &b"<b>"[..]),
                (Kind::Text, &b"c"[..]),
                (Kind::Marker, &b"[d]"[..]),
                (Kind::Text, &b"e"[..]),
                (Kind::Text, &b"<f"[..]),
            ]
        );
    }

    #[test]
    fn the_diff_is_what_one_output_adds() {
        let d = diff_split(b"<s>x</s>", b"<s>x</s><a>\n<think>\n");
        assert_eq!(d.left, b"");
        assert_eq!(d.right, b"<a>\n<think>\n");
        let d = diff_split(b"<u>A<e>", b"<u><t>R</t>A<e>");
        assert_eq!(
            (d.left.as_slice(), d.right.as_slice()),
            (&b""[..], &b"<t>R</t>"[..])
        );
    }

    #[test]
    fn wrapped_reasoning_reads_both_markers() {
        let s = b"<u>U<a><think>\nR\n</think>\n\nA";
        let (pre, post) = wrapped(s, b"R", true).unwrap();
        assert_eq!((pre, post), (&b"<think>\n"[..], &b"\n</think>\n\n"[..]));
        assert_eq!(delimited(b"xR </t> y", b"R"), Some(&b"</t> "[..]));
    }
}
