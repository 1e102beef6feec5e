// The model as length-prefixed text from the field table, and a stack's text read back.
#include "site/model_text.h"

#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "site/fields.h"

namespace sitegen {

namespace {

template <typename V> struct is_vector : std::false_type {};
template <typename V> struct is_vector<std::vector<V>> : std::true_type {};
template <typename V> struct is_pair : std::false_type {};
template <typename A, typename B> struct is_pair<std::pair<A, B>> : std::true_type {};

// ---- writing ------------------------------------------------------------------------------

template <typename T>
void put_table(std::string& out, const T& object, bool with_stacks);

template <typename V>
void put_value(std::string& out, const V& v) {
    if constexpr (std::is_same_v<V, std::string>) {
        append_prefixed(out, v);
    } else if constexpr (std::is_same_v<V, bool>) {
        out += v ? 'T' : 'F';
    } else if constexpr (std::is_same_v<V, int>) {
        out += 'i' + std::to_string(v) + ';';
    } else if constexpr (std::is_enum_v<V>) {
        append_prefixed(out, enum_names<V>()[static_cast<size_t>(v)].name);
    } else if constexpr (FieldTable<V>) {
        put_table(out, v, true);
    } else if constexpr (is_pair<V>::value) {
        put_value(out, v.first);
        put_value(out, v.second);
    } else if constexpr (is_vector<V>::value) {
        out += '[' + std::to_string(v.size()) + ';';
        for (const auto& item : v) put_value(out, item);
        out += ']';
    } else {
        static_assert(std::is_same_v<V, ExtendsPaths>, "a field type the model text does not cover");
    }
}

template <typename T>
void put_table(std::string& out, const T& object, bool with_stacks) {
    out += '(';
    for (const auto& row : fields_of<T>())
        std::visit(
            [&](auto member) {
                using M = decltype(member);
                if constexpr (!std::is_same_v<M, ExtendsPaths>) {  // its files' values are in the model
                    using V = member_value_t<M>;
                    if constexpr (std::is_same_v<V, std::vector<Stack>>)
                        if (!with_stacks) return;
                    append_prefixed(out, row.key);
                    put_value(out, object.*member);
                }
            },
            row.member);
    out += ')';
}

// ---- reading back -------------------------------------------------------------------------

template <typename T>
bool get_table(PrefixedReader& in, T& object);

template <typename V>
bool get_value(PrefixedReader& in, V& v) {
    if constexpr (std::is_same_v<V, std::string>) {
        const std::string_view s = in.prefixed();
        if (in.ok) v.assign(s);
    } else if constexpr (std::is_same_v<V, bool>) {
        if (!in.in.empty() && (in.in.front() == 'T' || in.in.front() == 'F')) v = in.in.front() == 'T';
        else in.ok = false;
        if (in.ok) in.in.remove_prefix(1);
    } else if constexpr (std::is_same_v<V, int>) {
        if (in.literal('i')) v = in.number<int>(';');
    } else if constexpr (std::is_enum_v<V>) {
        const std::string_view name = in.prefixed();
        if (!in.ok) return false;
        bool found = false;
        for (const auto& n : enum_names<V>())
            if (name == n.name) {
                v = n.value;
                found = true;
            }
        in.ok = in.ok && found;
    } else if constexpr (FieldTable<V>) {
        get_table(in, v);
    } else if constexpr (is_pair<V>::value) {
        if (get_value(in, v.first)) get_value(in, v.second);
    } else if constexpr (is_vector<V>::value) {
        // (every item takes at least one byte: a count beyond the text is a broken text, not an allocation)
        const size_t n = in.literal('[') ? in.number<size_t>(';') : 0;
        if (!in.ok || n > in.in.size()) return in.ok = false;
        v.clear();
        v.reserve(n);
        for (size_t i = 0; i < n && in.ok; ++i) get_value(in, v.emplace_back());
        in.literal(']');
    } else {
        static_assert(std::is_same_v<V, ExtendsPaths>, "a field type the model text does not cover");
    }
    return in.ok;
}

template <typename T>
bool get_table(PrefixedReader& in, T& object) {
    if (!in.literal('(')) return false;
    for (const auto& row : fields_of<T>()) {
        std::visit(
            [&](auto member) {
                using M = decltype(member);
                if constexpr (!std::is_same_v<M, ExtendsPaths>) {
                    const std::string_view key = in.prefixed();
                    if (!in.ok || key != row.key) in.ok = false;
                    else get_value(in, object.*member);
                }
            },
            row.member);
        if (!in.ok) return false;
    }
    return in.literal(')');
}

}  // namespace

std::string site_wide_text(const Site& site) {
    std::string out;
    put_table(out, site, false);
    return out;
}

std::string stack_text(const Stack& stack) {
    std::string out;
    put_table(out, stack, true);
    return out;
}

std::string python_text(const Python& python) {
    std::string out;
    put_table(out, python, true);
    return out;
}

bool read_stack_text(std::string_view text, Stack& out) {
    PrefixedReader in{text};
    return get_table(in, out) && in.in.empty();
}

}  // namespace sitegen
