// Typo suggestions by Damerau-Levenshtein distance.
#include "site/suggest.h"

#include <algorithm>
#include <cctype>

namespace sitegen {

size_t edit_distance(std::string_view a, std::string_view b) {
    const size_t n = a.size(), m = b.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j) {
            size_t cost = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                                  std::tolower(static_cast<unsigned char>(b[j - 1]))
                              ? 0
                              : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[n][m];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
    // Long keys tolerate more typos; very short ones only one.
    const size_t limit = std::max<size_t>(1, std::min<size_t>(4, word.size() / 3));
    std::string best;
    size_t best_distance = limit + 1;
    for (const auto& c : candidates) {
        size_t dist = edit_distance(word, c);
        if (dist < best_distance) { best_distance = dist; best = c; }
    }
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    std::string best = closest_match(word, candidates);
    return best.empty() ? std::string() : "did you mean '" + best + "'?";
}

}  // namespace sitegen
