// Hostlist expansion (C++) and the equivalent first-host function in bash.
#include "node/hostlist.h"

#include <charconv>

namespace sitegen {

namespace {

// One bracket group "001-003,007" -> {"001","002","003","007"}, padding kept.
bool expand_group(std::string_view group, std::vector<std::string>& out, std::string& error, size_t max_hosts) {
    size_t start = 0;
    while (start <= group.size()) {
        size_t comma = group.find(',', start);
        std::string_view part = group.substr(start, comma == group.npos ? group.npos : comma - start);
        size_t dash = part.find('-');
        std::string_view lo = part.substr(0, dash);
        std::string_view hi = dash == part.npos ? lo : part.substr(dash + 1);
        unsigned long a = 0, b = 0;
        auto ok = [](std::string_view s, unsigned long& v) {
            if (s.empty() || s.size() > 18) return false;
            auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            return ec == std::errc() && p == s.data() + s.size();
        };
        if (!ok(lo, a) || !ok(hi, b) || b < a) {
            error = "bad range '" + std::string(part) + "' in hostlist";
            return false;
        }
        // Checked before expanding, so a hostile range never allocates.
        if (out.size() + (b - a) >= max_hosts) {
            error = "range '" + std::string(part) + "' expands to more than " + std::to_string(max_hosts) + " hosts";
            return false;
        }
        const size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
        for (unsigned long v = a; v <= b; ++v) {
            std::string s = std::to_string(v);
            if (s.size() < width) s.insert(0, width - s.size(), '0');
            out.push_back(std::move(s));
        }
        if (comma == group.npos) break;
        start = comma + 1;
    }
    return true;
}

// One top-level item ("rack[1-2]n[01-04]") -> its hosts, bracket groups as a cartesian product.
bool expand_item(std::string_view item, std::vector<std::string>& out, std::string& error, size_t max_hosts) {
    std::vector<std::string> hosts = {""};
    size_t i = 0;
    while (i < item.size()) {
        size_t open = item.find('[', i);
        std::string_view literal = item.substr(i, open == item.npos ? item.npos : open - i);
        if (literal.find(']') != literal.npos) { error = "unbalanced ']' in hostlist"; return false; }
        for (auto& h : hosts) h += literal;
        if (open == item.npos) break;
        size_t close = item.find(']', open);
        if (close == item.npos) { error = "unbalanced '[' in hostlist"; return false; }
        std::vector<std::string> values;
        if (!expand_group(item.substr(open + 1, close - open - 1), values, error, max_hosts)) return false;
        if (hosts.size() * values.size() > max_hosts) { error = "hostlist expands to too many hosts"; return false; }
        std::vector<std::string> next;
        for (const auto& h : hosts)
            for (const auto& v : values) next.push_back(h + v);
        hosts = std::move(next);
        i = close + 1;
    }
    if (hosts.size() == 1 && hosts[0].empty()) { error = "empty host name in hostlist"; return false; }
    if (hosts.size() > max_hosts) { error = "hostlist expands to too many hosts"; return false; }
    out.insert(out.end(), hosts.begin(), hosts.end());
    return true;
}

}  // namespace

std::optional<std::vector<std::string>> expand_hostlist(std::string_view expr, std::string& error,
                                                        size_t max_hosts) {
    std::vector<std::string> out;
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i <= expr.size(); ++i) {
        if (i < expr.size() && expr[i] == '[') ++depth;
        if (i < expr.size() && expr[i] == ']') --depth;
        if (depth < 0) { error = "unbalanced ']' in hostlist"; return std::nullopt; }
        if (i == expr.size() || (expr[i] == ',' && depth == 0)) {
            // Each item gets only what is left of the budget, so `out` never passes max_hosts.
            if (!expand_item(expr.substr(start, i - start), out, error, max_hosts - out.size())) return std::nullopt;
            start = i + 1;
        }
    }
    if (depth != 0) { error = "unbalanced '[' in hostlist"; return std::nullopt; }
    return out;
}

std::string bash_first_host_function() {
    // Pattern expansions only, no per-character loop: a fixed number of steps per bracket
    // group of the first item, plus one bracket-balance pass over the whole list. Each
    // step copies the rest of the list, so the host is capped at 255 bytes (a DNS name):
    // that bounds the steps, and a list like "n[1]n[1]n[1]..." cannot make it quadratic.
    return R"BASH(# sitegen_first_host LIST: first host of a Slurm hostlist, in pure bash (no fork).
# "nid[001-003,007],x" -> nid001; "rack[1-2]n[01-04]" -> rack1n01; padding is kept.
# Checks the brackets of the whole list and the syntax of the first item; on malformed
# input (or a first host longer than 255 bytes) prints a message to stderr and returns 2.
sitegen_first_host() {
  # Bytes, not characters: host names are ASCII, and multibyte pattern matching is slow.
  local LC_ALL=C
  local list=${1-} rest out="" literal group first lo hi brackets
  local range_list='^[[:digit:]]{1,18}(-[[:digit:]]{1,18})?(,[[:digit:]]{1,18}(-[[:digit:]]{1,18})?)*$'
  # Balanced, unnested brackets leave nothing here; anything else skips to the error.
  brackets=${list//[^\[\]]/}
  brackets=${brackets//'[]'/}
  rest=$list
  while [[ -z $brackets ]]; do
    literal=${rest%%[\[\],]*}
    out+=$literal
    ((${#out} <= 255)) || break
    rest=${rest#"$literal"}
    if [[ $rest != '['* ]]; then
      if [[ -n $out ]]; then
        printf '%s\n' "$out"
        return 0
      fi
      break
    fi
    group=${rest%%']'*}
    rest=${rest:${#group}+1}
    group=${group#'['}
    [[ $group =~ $range_list ]] || break
    first=${group%%,*}
    lo=${first%%-*}
    hi=${first#*-}
    ((10#$lo <= 10#$hi)) || break
    out+=$lo
    ((${#out} <= 255)) || break
  done
  printf 'sitegen_first_host: malformed hostlist: %s\n' "$list" >&2
  return 2
}
)BASH";
}

}  // namespace sitegen
