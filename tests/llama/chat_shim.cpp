// Renders conversations with llama.cpp's own chat path (libllama-common's
// common_chat_templates_init with a template override, then common_chat_templates_apply), for
// tests/chat_llama.rs. Usage: chat_shim CONVERSATIONS.jsonl TEMPLATE...
// Per template: "CAPS <system> <string> <typed> <tool_calls> <object_args>\n", then per
// conversation "OK <len>\n<text>\n" or "ERR <len>\n<message>\n".
#include "chat.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

static void put(const char * tag, const std::string & s) {
    std::cout << tag << " " << s.size() << "\n" << s << "\n";
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        return 2;
    }
    std::vector<std::string> lines;
    {
        std::ifstream in(argv[1]);
        std::string line;
        while (std::getline(in, line)) {
            if (!line.empty()) {
                lines.push_back(line.substr(line.find('\t') + 1));
            }
        }
    }
    for (int t = 2; t < argc; t++) {
        std::ifstream in(argv[t]);
        std::stringstream ss;
        ss << in.rdbuf();
        common_chat_templates_ptr tmpls;
        try {
            tmpls = common_chat_templates_init(nullptr, ss.str());
        } catch (const std::exception & e) {
            std::cout << "INITERR\n";
            for (size_t i = 0; i < lines.size(); i++) {
                put("ERR", std::string("init: ") + e.what());
            }
            continue;
        }
        auto caps = common_chat_templates_get_caps(tmpls.get());
        std::cout << "CAPS " << caps["supports_system_role"] << " " << caps["supports_string_content"] << " "
                  << caps["supports_typed_content"] << " " << caps["supports_tool_calls"] << " "
                  << caps["supports_object_arguments"] << "\n";
        for (const auto & line : lines) {
            try {
                auto req = common_json::parse(line);
                common_chat_templates_inputs inputs;
                inputs.messages = common_chat_msgs_parse_oaicompat(req.at("messages"));
                if (req.contains("tools")) {
                    inputs.tools = common_chat_tools_parse_oaicompat(req.at("tools"));
                }
                inputs.add_generation_prompt = true;
                for (const auto & [k, v] : req.items()) {
                    if (k == "messages" || k == "tools") {
                        continue;
                    }
                    if (k == "add_generation_prompt") {
                        inputs.add_generation_prompt = v.is_boolean() && v.get<bool>();
                    } else if (k == "continue_final_message") {
                        inputs.continue_final_message = common_chat_continuation_parse(v);
                    } else {
                        inputs.chat_template_kwargs[k] = v.dump();
                        if (k == "enable_thinking" && v.is_boolean()) {
                            inputs.enable_thinking = v.get<bool>();
                        }
                    }
                }
                put("OK", common_chat_templates_apply(tmpls.get(), inputs).prompt);
            } catch (const std::exception & e) {
                put("ERR", e.what());
            }
        }
    }
    return 0;
}
