// The rules' memo: its key and its text (length-prefixed fields, closed by a digest of them).
#include "lua/rules_memo.h"

#include "out/sha256.h"
#include "site/model_text.h"

namespace sitegen {

namespace {

constexpr std::string_view kHeader = "sitegen rules memo v1\n";

char severity_letter(Severity s) {
    switch (s) {
        case Severity::error: return 'e';
        case Severity::warning: return 'w';
        case Severity::note: return 'n';
    }
    return 'e';
}

bool severity_of(char c, Severity& s) {
    if (c == 'e') s = Severity::error;
    else if (c == 'w') s = Severity::warning;
    else if (c == 'n') s = Severity::note;
    else return false;
    return true;
}

}  // namespace

std::string rules_memo_text(const RulesRecord& r) {
    std::string body;
    append_prefixed(body, r.key);
    append_prefixed(body, r.digest);
    body += std::to_string(r.reads.size()) + '\n';
    for (const auto& line : r.reads) {
        append_prefixed(body, line);
        body += '\n';
    }
    body += std::to_string(r.findings.size()) + '\n';
    for (const auto& f : r.findings) {
        body += severity_letter(f.severity);
        append_prefixed(body, f.path);
        append_prefixed(body, f.message);
        body += '\n';
    }
    std::string out(kHeader);
    out += body;
    out += sha256_hex(body);
    out += '\n';
    return out;
}

bool parse_rules_memo(std::string_view text, RulesRecord& r) {
    if (text.substr(0, kHeader.size()) != kHeader || text.size() < kHeader.size() + 65) return false;
    const std::string_view body = text.substr(kHeader.size(), text.size() - kHeader.size() - 65);
    if (text.back() != '\n' || sha256_hex(body) != text.substr(text.size() - 65, 64)) return false;
    PrefixedReader in{body};
    RulesRecord out;
    out.key = std::string(in.prefixed());
    out.digest = std::string(in.prefixed());
    const size_t reads = in.number<size_t>('\n');
    for (size_t i = 0; in.ok && i < reads; ++i) {
        out.reads.emplace(in.prefixed());
        in.literal('\n');
    }
    const size_t findings = in.number<size_t>('\n');
    for (size_t i = 0; in.ok && i < findings; ++i) {
        RuleFinding f;
        if (in.in.empty() || !severity_of(in.in.front(), f.severity)) return false;
        in.in.remove_prefix(1);
        f.path = std::string(in.prefixed());
        f.message = std::string(in.prefixed());
        in.literal('\n');
        out.findings.push_back(std::move(f));
    }
    if (!in.ok || !in.in.empty()) return false;
    r = std::move(out);
    return true;
}

std::string rules_key(const std::string& identity, const std::vector<std::string>& files,
                      const std::vector<std::string>& texts) {
    std::string all;
    append_prefixed(all, identity);
    for (size_t i = 0; i < files.size(); ++i) {
        append_prefixed(all, files[i]);
        append_prefixed(all, i < texts.size() ? texts[i] : std::string());
    }
    return sha256_hex(all);
}

}  // namespace sitegen
