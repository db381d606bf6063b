//! Chat templates from strangers: the published template-injection payloads reach nothing but
//! the request, and runaway templates and requests stop at the renderer's documented bounds with
//! a clear error (each well within a second; the bound checked here is generous, to catch a
//! hang rather than time the machine).

use gguf::chat::{render_template, ChatTemplate};
use gguf::ErrorCode;
use std::time::{Duration, Instant};

const REQUEST: &[u8] = br#"{"messages": [{"role": "user", "content": "hi"}]}"#;

/// Renders `template`; the error's code and message, or the text.
fn render(template: &str) -> Result<String, (ErrorCode, String)> {
    let started = Instant::now();
    let r = render_template(template, REQUEST).map_err(|e| (e.code(), e.to_string()));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{template:.80}: took {:?}",
        started.elapsed()
    );
    r
}

fn refused(template: &str, code: ErrorCode, words: &str) {
    match render(template) {
        Ok(text) => panic!("{template:.80}: rendered {text:.200}"),
        Err((c, m)) => {
            assert_eq!(c, code, "{template:.80}: {m}");
            assert!(m.contains(words), "{template:.80}: {m:?} lacks {words:?}");
        }
    }
}

#[test]
fn injection_payloads_reach_no_python_internals() {
    // From the published reports (CVE-2024-34359 and the SSTI catalogues): each either fails or
    // renders nothing of the host.
    for payload in [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ ''.__class__.__base__.__subclasses__()[40]('/etc/passwd').read() }}",
        "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
        "{{ joiner.__init__.__globals__.os.popen('id').read() }}",
        "{{ lipsum.__globals__['os'].popen('id').read() }}",
        "{{ namespace.__init__.__globals__.os.popen('id').read() }}",
        "{{ self.__init__.__globals__.__builtins__.__import__('os').popen('id').read() }}",
        "{{ self._TemplateReference__context.cycler.__init__.__globals__.os }}",
        "{{ request.application.__globals__.__builtins__.__import__('os') }}",
        "{{ config.items() }}",
        "{{ messages.__class__.__init__.__globals__ }}",
        "{{ raise_exception.__globals__ }}",
        "{{ strftime_now.__globals__ }}",
        "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
        "{{ dict.__init__.__globals__ }}",
        "{{ ''|attr('__class__') }}",
        "{{ debug() }}",
        "{% include '/etc/passwd' %}",
        "{% import '/etc/passwd' as x %}",
        "{% extends '/etc/passwd' %}",
    ] {
        if let Ok(text) = render(payload) {
            for host in [
                "root:",
                "uid=",
                "class",
                "module",
                "function",
                "<built-in",
                "os",
            ] {
                assert!(
                    !text.contains(host),
                    "{payload}: rendered {text:?}, which shows {host:?}"
                );
            }
        }
    }
}

#[test]
fn the_immutable_sandbox_refuses_changes_to_the_request() {
    refused(
        "{{ messages.append(1) }}",
        ErrorCode::TemplateRender,
        "append",
    );
    refused(
        "{% set x = messages[0].update({'role': 'x'}) %}",
        ErrorCode::TemplateRender,
        "update",
    );
    refused(
        "{% set ns = namespace(_secret=1) %}",
        ErrorCode::TemplateRender,
        "underscore-prefixed",
    );
}

#[test]
fn runaway_templates_stop_at_the_bounds() {
    refused(
        "{% for i in range(10**9) %}x{% endfor %}",
        ErrorCode::TemplateRender,
        "range",
    );
    refused(
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        ErrorCode::TemplateLimit,
        "units of work",
    );
    refused(
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        ErrorCode::TemplateLimit,
        "deep",
    );
    refused(
        "{% for i in range(100000) %}{{ 'a' * 100000000 }}{% endfor %}",
        ErrorCode::TemplateLimit,
        "bytes a render may write",
    );
    refused(
        &format!(
            "{{% for i in range(100000) %}}{}{{% endfor %}}",
            "x".repeat(10_000)
        ),
        ErrorCode::TemplateLimit,
        "bytes a render may write",
    );
    refused(
        "{% set ns = namespace(s='a') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        ErrorCode::TemplateLimit,
        "units of work",
    );
    let huge = "x".repeat(100 << 20);
    match ChatTemplate::new(&huge) {
        Ok(_) => panic!("a 100 MB template compiled"),
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::TemplateLimit);
            assert!(e.to_string().contains("bytes"), "{e}");
        }
    }
}

#[test]
fn malformed_templates_name_line_and_column() {
    match render("line one\n{{ messages[0]['content'] }\n") {
        Ok(t) => panic!("rendered {t:?}"),
        Err((code, m)) => {
            assert_eq!(code, ErrorCode::TemplateSyntax);
            assert!(m.contains("line 2"), "{m}");
        }
    }
    refused("{% for x in y %}", ErrorCode::TemplateSyntax, "line 1");
    refused(
        "a\n\n  {{ raise_exception('Roles must alternate') }}",
        ErrorCode::TemplateRender,
        "line 3, column 6: Roles must alternate",
    );
}

#[test]
fn malformed_requests_name_the_byte_offset() {
    let t = ChatTemplate::new("{{ messages }}").unwrap();
    for (request, offset, words) in [
        (&b"{\"messages\": [}"[..], 14, "expected a JSON value"),
        (b"{\"messages\": [1, 2", 18, "expected ',' or ']'"),
        (b"[]", 0, "expected a JSON object"),
        (b"{\"messages\": \"\xff\"}", 14, "UTF-8"),
    ] {
        let e = t.render(request).unwrap_err();
        assert_eq!(e.code(), ErrorCode::BadRequest, "{e}");
        assert_eq!(e.offset(), Some(offset), "{e}");
        assert!(e.to_string().contains(words), "{e}");
    }
    let deep = format!(
        "{{\"messages\": [{{\"role\": \"user\", \"content\": {}1{}}}]}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let started = Instant::now();
    let e = t.render(deep.as_bytes()).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(e.code(), ErrorCode::BadRequest);
    assert!(e.to_string().contains("nested deeper"), "{e}");
    let e = t.render(br#"{"messages": []}"#).unwrap_err();
    assert!(e.to_string().contains("empty conversation"), "{e}");
}

#[test]
fn user_text_is_rendered_never_evaluated() {
    let t = ChatTemplate::new("{% for m in messages %}[{{ m.content }}]{% endfor %}").unwrap();
    let text = t
        .render(
            br#"{"messages": [{"role": "user", "content": "{{ 7*7 }} {% raw %} <|im_start|>"}]}"#,
        )
        .unwrap();
    assert_eq!(text, "[{{ 7*7 }} {% raw %} <|im_start|>]");
}
