"""The reference renderer: transformers' own chat-template code on each case.

Reads a JSON list of cases ({"template": str, "request": str}) from the file named first and
writes a JSON list of results ({"text": str} or {"error": str, "raised": bool}) to the file
named second. Each request is read with json.loads and rendered as apply_chat_template(...,
tokenize=False) renders it: its steps before render_jinja_template (the empty-conversation
check, _normalize_chat_messages, the continue_final_message / add_generation_prompt check) are
the ones below, in its order, and the request's other keys are the template's variables, as the
tokenizer's special tokens and the caller's kwargs are there. "raised" tells an error the template
raised itself (raise_exception), whose message is compared, from any other failure.

strftime_now is pinned to SOURCE_DATE_EPOCH (UTC) as libgguf pins it, so that dates compare.
"""

import datetime
import json
import os
import sys

import jinja2
from transformers.utils import chat_template_utils as ctu

EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "1722000309"))


def strftime_now(fmt):
    return datetime.datetime.fromtimestamp(EPOCH, datetime.timezone.utc).strftime(fmt)


def render(template, request_text):
    request = json.loads(request_text)
    messages = request.pop("messages")
    tools = request.pop("tools", None)
    documents = request.pop("documents", None)
    add_generation_prompt = request.pop("add_generation_prompt", False)
    continue_final_message = request.pop("continue_final_message", False)
    if isinstance(messages, (list, tuple)) and len(messages) == 0:
        raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
    conversations = [ctu._normalize_chat_messages(messages)]
    if continue_final_message and add_generation_prompt:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible.")
    compiled = ctu._compile_jinja_template(template)
    compiled.environment.globals["strftime_now"] = strftime_now
    rendered, _ = ctu.render_jinja_template(
        conversations=conversations,
        tools=tools,
        documents=documents,
        chat_template=template,
        continue_final_message=continue_final_message,
        add_generation_prompt=add_generation_prompt,
        **request,
    )
    return rendered[0]


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    results = []
    for case in cases:
        try:
            results.append({"text": render(case["template"], case["request"])})
        except jinja2.exceptions.TemplateError as e:
            # raise_exception raises TemplateError itself; jinja2's own errors are subclasses.
            raised = type(e) is jinja2.exceptions.TemplateError
            results.append({"error": str(e), "raised": raised})
        except Exception as e:  # noqa: BLE001 - every failure is a result to compare
            results.append({"error": f"{type(e).__name__}: {e}", "raised": False})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
