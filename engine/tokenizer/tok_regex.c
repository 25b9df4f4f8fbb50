/* A backtracking matcher for the Oniguruma subset that tokenizer.json Split
 * and Replace patterns use (GPT-2, cl100k / Llama 3, Qwen, o200k styles):
 * classes with Unicode categories, alternation, non-capturing, case-folding
 * and look-ahead groups, greedy/lazy/possessive quantifiers. Matching runs
 * over code points; a repeat of one class (the common case) is a loop, not a
 * recursion, so long runs of text cost no stack. Anything outside the subset
 * is refused at compile time, naming the construct. */
#include <stdio.h>
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

enum { RX_SET, RX_ALT, RX_REPEAT, RX_LOOK, RX_ATOMIC, RX_BOL, RX_EOL, RX_BOT, RX_EOT, RX_EOT_NL };
enum { RX_GREEDY, RX_LAZY, RX_POSSESSIVE };
enum { RXI_RANGE, RXI_CATS, RXI_SPACE, RXI_WORD, RXI_DIGIT, RXI_HEX, RXI_NOT_NL };

#define RX_INF UINT32_MAX
#define RX_STEP_LIMIT 10000000u
#define RX_DEPTH_LIMIT 2000

typedef struct rx_item {
    uint8_t kind;
    bool neg;
    uint32_t lo, hi; /* RANGE */
    uint32_t cats;   /* CATS: bit per utf8proc category */
} rx_item;

typedef struct rx_set {
    uint64_t ascii[2]; /* the answer for code points < 128, precomputed */
    uint32_t first, n; /* items */
    bool neg, icase;
} rx_set;

typedef struct rx_node {
    uint8_t kind, mode;
    bool neg;    /* LOOK: negative */
    bool simple; /* REPEAT: child is one SET node */
    int32_t next;
    int32_t child; /* REPEAT, LOOK, ATOMIC: child head; ALT: first alternative in alts */
    uint32_t n_alts;
    uint32_t set;
    uint32_t min, max;
} rx_node;

struct tok_regex {
    rx_node *nodes;
    size_t n_nodes, nodes_cap;
    rx_set *sets;
    size_t n_sets, sets_cap;
    rx_item *items;
    size_t n_items, items_cap;
    int32_t *alts;
    size_t n_alts, alts_cap;
    int32_t root;
};

/* ---- compiling ------------------------------------------------------------ */

typedef struct rx_parser {
    vkl_context *ctx;
    tok_regex *re;
    const uint32_t *p; /* pattern code points */
    size_t n, i;
    const char *src; /* for messages */
    size_t src_len;
    int depth;
} rx_parser;

typedef struct rx_frag {
    int32_t head, tail; /* -1: empty */
} rx_frag;

static vkl_status rx_unsupported(rx_parser *ps, const char *what) {
    return vkl_fail(ps->ctx, VKL_ERR_UNSUPPORTED,
                    "regex pattern '%.*s': %s at character %zu is not supported by the tokenizer's matcher",
                    (int)(ps->src_len > 300 ? 300 : ps->src_len), ps->src, what, ps->i);
}

static vkl_status rx_new_node(rx_parser *ps, uint8_t kind, int32_t *out) {
    tok_regex *re = ps->re;
    if (re->n_nodes >= INT32_MAX / 2) return rx_unsupported(ps, "a pattern this large");
    vkl_status st = tok_grow(ps->ctx, (void **)&re->nodes, &re->nodes_cap, re->n_nodes + 1, sizeof(rx_node));
    if (st) return st;
    rx_node *nd = &re->nodes[re->n_nodes];
    memset(nd, 0, sizeof(*nd));
    nd->kind = kind;
    nd->next = -1;
    nd->child = -1;
    *out = (int32_t)re->n_nodes++;
    return VKL_OK;
}

static vkl_status rx_add_item(rx_parser *ps, rx_item it) {
    tok_regex *re = ps->re;
    vkl_status st = tok_grow(ps->ctx, (void **)&re->items, &re->items_cap, re->n_items + 1, sizeof(rx_item));
    if (st) return st;
    re->items[re->n_items++] = it;
    re->sets[re->n_sets - 1].n++;
    return VKL_OK;
}

static vkl_status rx_begin_set(rx_parser *ps, bool neg, bool icase, uint32_t *set) {
    tok_regex *re = ps->re;
    vkl_status st = tok_grow(ps->ctx, (void **)&re->sets, &re->sets_cap, re->n_sets + 1, sizeof(rx_set));
    if (st) return st;
    rx_set *s = &re->sets[re->n_sets];
    memset(s, 0, sizeof(*s));
    s->first = (uint32_t)re->n_items;
    s->neg = neg;
    s->icase = icase;
    *set = (uint32_t)re->n_sets++;
    return VKL_OK;
}

static bool rx_is_word(uint32_t cp) {
    int c = tok_category(cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ND) || c == UTF8PROC_CATEGORY_PC;
}

static bool rx_items_test(const tok_regex *re, const rx_set *s, uint32_t cp) {
    uint32_t folded = s->icase ? tok_casefold(cp) : cp;
    for (uint32_t k = 0; k < s->n; k++) {
        const rx_item *it = &re->items[s->first + k];
        bool m;
        switch (it->kind) {
        case RXI_RANGE:
            m = cp >= it->lo && cp <= it->hi;
            /* case-insensitive: equal simple case folds (s, S and U+017F) */
            if (!m && s->icase)
                m = (folded >= it->lo && folded <= it->hi) || (it->lo == it->hi && tok_casefold(it->lo) == folded);
            break;
        case RXI_CATS: m = (it->cats >> tok_category(cp)) & 1; break;
        case RXI_SPACE: m = tok_is_space(cp); break;
        case RXI_WORD: m = rx_is_word(cp); break;
        case RXI_DIGIT: m = tok_category(cp) == UTF8PROC_CATEGORY_ND; break;
        case RXI_HEX: m = (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'f'); break;
        default: m = cp != '\n'; break;
        }
        if (m != it->neg) return true;
    }
    return false;
}

static bool rx_set_test_slow(const tok_regex *re, const rx_set *s, uint32_t cp) {
    bool in = rx_items_test(re, s, cp);
    if (!in && s->icase) {
        /* a range like [a-z] also takes the other case of its letters */
        uint32_t lo = tok_tolower(cp), up = tok_toupper(cp);
        in = (lo != cp && rx_items_test(re, s, lo)) || (up != cp && rx_items_test(re, s, up));
    }
    return in != s->neg;
}

static inline bool rx_set_test(const tok_regex *re, uint32_t set, uint32_t cp) {
    const rx_set *s = &re->sets[set];
    if (cp < 128) return (s->ascii[cp >> 6] >> (cp & 63)) & 1;
    return rx_set_test_slow(re, s, cp);
}

static void rx_end_set(rx_parser *ps, uint32_t set) {
    rx_set *s = &ps->re->sets[set];
    for (uint32_t cp = 0; cp < 128; cp++)
        if (rx_set_test_slow(ps->re, s, cp)) s->ascii[cp >> 6] |= (uint64_t)1 << (cp & 63);
}

static int hexval(uint32_t c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (int)((c | 0x20) - 'a' + 10);
    return -1;
}

/* \p{Name}: general categories by short or long name, as a category mask. */
static bool rx_category_mask(const char *name, uint32_t *mask) {
    static const struct {
        const char *a, *b;
        uint32_t m;
    } names[] = {
#define B(c) (1u << UTF8PROC_CATEGORY_##c)
        {"L", "Letter", B(LU) | B(LL) | B(LT) | B(LM) | B(LO)},
        {"LC", "Cased_Letter", B(LU) | B(LL) | B(LT)},
        {"L&", "L&", B(LU) | B(LL) | B(LT)},
        {"Lu", "Uppercase_Letter", B(LU)},
        {"Ll", "Lowercase_Letter", B(LL)},
        {"Lt", "Titlecase_Letter", B(LT)},
        {"Lm", "Modifier_Letter", B(LM)},
        {"Lo", "Other_Letter", B(LO)},
        {"M", "Mark", B(MN) | B(MC) | B(ME)},
        {"Mn", "Nonspacing_Mark", B(MN)},
        {"Mc", "Spacing_Mark", B(MC)},
        {"Me", "Enclosing_Mark", B(ME)},
        {"N", "Number", B(ND) | B(NL) | B(NO)},
        {"Nd", "Decimal_Number", B(ND)},
        {"Nl", "Letter_Number", B(NL)},
        {"No", "Other_Number", B(NO)},
        {"P", "Punctuation", B(PC) | B(PD) | B(PS) | B(PE) | B(PI) | B(PF) | B(PO)},
        {"Pc", "Connector_Punctuation", B(PC)},
        {"Pd", "Dash_Punctuation", B(PD)},
        {"Ps", "Open_Punctuation", B(PS)},
        {"Pe", "Close_Punctuation", B(PE)},
        {"Pi", "Initial_Punctuation", B(PI)},
        {"Pf", "Final_Punctuation", B(PF)},
        {"Po", "Other_Punctuation", B(PO)},
        {"S", "Symbol", B(SM) | B(SC) | B(SK) | B(SO)},
        {"Sm", "Math_Symbol", B(SM)},
        {"Sc", "Currency_Symbol", B(SC)},
        {"Sk", "Modifier_Symbol", B(SK)},
        {"So", "Other_Symbol", B(SO)},
        {"Z", "Separator", B(ZS) | B(ZL) | B(ZP)},
        {"Zs", "Space_Separator", B(ZS)},
        {"Zl", "Line_Separator", B(ZL)},
        {"Zp", "Paragraph_Separator", B(ZP)},
        {"C", "Other", B(CC) | B(CF) | B(CS) | B(CO) | B(CN)},
        {"Cc", "Control", B(CC)},
        {"Cf", "Format", B(CF)},
        {"Cs", "Surrogate", B(CS)},
        {"Co", "Private_Use", B(CO)},
        {"Cn", "Unassigned", B(CN)},
#undef B
    };
    for (size_t i = 0; i < VKL_ARRAY_LEN(names); i++)
        if (!strcmp(name, names[i].a) || !strcmp(name, names[i].b)) {
            *mask = names[i].m;
            return true;
        }
    return false;
}

/* An escape after '\' at ps->i (pointing past the backslash). Either a single
 * code point (*cp) or a class item (*it, *is_item). */
static vkl_status rx_escape(rx_parser *ps, bool in_class, uint32_t *cp, rx_item *it, bool *is_item) {
    *is_item = false;
    if (ps->i >= ps->n) return rx_unsupported(ps, "a trailing backslash");
    uint32_t c = ps->p[ps->i++];
    memset(it, 0, sizeof(*it));
    switch (c) {
    case 't': *cp = '\t'; return VKL_OK;
    case 'n': *cp = '\n'; return VKL_OK;
    case 'r': *cp = '\r'; return VKL_OK;
    case 'f': *cp = '\f'; return VKL_OK;
    case 'v': *cp = '\v'; return VKL_OK;
    case 'a': *cp = 7; return VKL_OK;
    case 'e': *cp = 27; return VKL_OK;
    case 's': case 'S': it->kind = RXI_SPACE; it->neg = c == 'S'; *is_item = true; return VKL_OK;
    case 'd': case 'D': it->kind = RXI_DIGIT; it->neg = c == 'D'; *is_item = true; return VKL_OK;
    case 'w': case 'W': it->kind = RXI_WORD; it->neg = c == 'W'; *is_item = true; return VKL_OK;
    case 'h': case 'H': it->kind = RXI_HEX; it->neg = c == 'H'; *is_item = true; return VKL_OK;
    case 'x': case 'u': {
        uint32_t v = 0;
        int digits = 0;
        if (c == 'x' && ps->i < ps->n && ps->p[ps->i] == '{') {
            ps->i++;
            while (ps->i < ps->n && ps->p[ps->i] != '}') {
                int h = hexval(ps->p[ps->i++]);
                if (h < 0 || ++digits > 8) return rx_unsupported(ps, "a malformed \\x{...} escape");
                v = v * 16 + (uint32_t)h;
            }
            if (ps->i >= ps->n || !digits) return rx_unsupported(ps, "a malformed \\x{...} escape");
            ps->i++;
        } else {
            int want = c == 'x' ? 2 : 4;
            for (; digits < want && ps->i < ps->n && hexval(ps->p[ps->i]) >= 0; digits++)
                v = v * 16 + (uint32_t)hexval(ps->p[ps->i++]);
            if (!digits || (c == 'u' && digits != 4)) return rx_unsupported(ps, "a malformed hex escape");
        }
        if (v > 0x10FFFF) return rx_unsupported(ps, "a code point above U+10FFFF");
        *cp = v;
        return VKL_OK;
    }
    case 'p': case 'P': {
        bool neg = c == 'P';
        char name[32];
        size_t k = 0;
        if (ps->i < ps->n && ps->p[ps->i] == '{') {
            ps->i++;
            if (ps->i < ps->n && ps->p[ps->i] == '^') {
                neg = !neg;
                ps->i++;
            }
            while (ps->i < ps->n && ps->p[ps->i] != '}') {
                uint32_t ch = ps->p[ps->i++];
                if (ch == ' ') continue;
                if (ch >= 128 || k + 1 >= sizeof(name)) return rx_unsupported(ps, "a \\p{...} name");
                name[k++] = (char)ch;
            }
            if (ps->i >= ps->n) return rx_unsupported(ps, "an unterminated \\p{");
            ps->i++;
        } else if (ps->i < ps->n && ps->p[ps->i] < 128) {
            name[k++] = (char)ps->p[ps->i++];
        }
        name[k] = 0;
        if (!rx_category_mask(name, &it->cats))
            return rx_unsupported(ps, "a \\p{...} property other than a general category");
        it->kind = RXI_CATS;
        it->neg = neg;
        *is_item = true;
        return VKL_OK;
    }
    default: break;
    }
    if (c == 'b' && in_class) {
        *cp = 8;
        return VKL_OK;
    }
    if ((c < 128 && ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) || (c >= '0' && c <= '9')) {
        ps->i--;
        return rx_unsupported(ps, "this escape");
    }
    *cp = c;
    return VKL_OK;
}

static vkl_status rx_parse_class(rx_parser *ps, bool icase, int32_t *node) {
    /* ps->i is past '[' */
    bool neg = false;
    if (ps->i < ps->n && ps->p[ps->i] == '^') {
        neg = true;
        ps->i++;
    }
    uint32_t set;
    vkl_status st = rx_begin_set(ps, neg, icase, &set);
    if (st) return st;
    bool first = true;
    for (;;) {
        if (ps->i >= ps->n) return rx_unsupported(ps, "an unterminated character class");
        uint32_t c = ps->p[ps->i];
        if (c == ']' && !first) {
            ps->i++;
            break;
        }
        first = false;
        if (c == '[') return rx_unsupported(ps, "a nested class or [:posix:] class");
        if (c == '&' && ps->i + 1 < ps->n && ps->p[ps->i + 1] == '&') return rx_unsupported(ps, "class intersection");
        ps->i++;
        uint32_t lo = c;
        if (c == '\\') {
            rx_item it;
            bool is_item;
            if ((st = rx_escape(ps, true, &lo, &it, &is_item))) return st;
            if (is_item) {
                if ((st = rx_add_item(ps, it))) return st;
                continue;
            }
        }
        uint32_t hi = lo;
        if (ps->i + 1 < ps->n && ps->p[ps->i] == '-' && ps->p[ps->i + 1] != ']') {
            ps->i++;
            hi = ps->p[ps->i++];
            if (hi == '\\') {
                rx_item it;
                bool is_item;
                if ((st = rx_escape(ps, true, &hi, &it, &is_item))) return st;
                if (is_item) return rx_unsupported(ps, "a range ending in a class escape");
            } else if (hi == '[') {
                return rx_unsupported(ps, "a nested class");
            }
            if (hi < lo) return rx_unsupported(ps, "an empty range");
        }
        if ((st = rx_add_item(ps, (rx_item){RXI_RANGE, false, lo, hi, 0}))) return st;
    }
    rx_end_set(ps, set);
    if ((st = rx_new_node(ps, RX_SET, node))) return st;
    ps->re->nodes[*node].set = set;
    return VKL_OK;
}

static vkl_status rx_set_node(rx_parser *ps, rx_item it, bool icase, int32_t *node) {
    uint32_t set;
    vkl_status st = rx_begin_set(ps, false, icase, &set);
    if (!st) st = rx_add_item(ps, it);
    if (!st) st = rx_new_node(ps, RX_SET, node);
    if (st) return st;
    rx_end_set(ps, set);
    ps->re->nodes[*node].set = set;
    return VKL_OK;
}

static vkl_status rx_parse_alt(rx_parser *ps, bool icase, rx_frag *out);

/* {n}, {n,}, {,m}, {n,m}; false (and i unchanged) if not a quantifier, in
 * which case '{' is a literal, as in Oniguruma. */
static bool rx_parse_braces(rx_parser *ps, uint32_t *min, uint32_t *max) {
    size_t i = ps->i + 1;
    uint64_t a = 0, b = 0;
    bool has_a = false, has_b = false, comma = false;
    while (i < ps->n && ps->p[i] >= '0' && ps->p[i] <= '9') {
        a = a * 10 + (ps->p[i++] - '0');
        has_a = true;
        if (a > 100000) return false;
    }
    if (i < ps->n && ps->p[i] == ',') {
        comma = true;
        i++;
        while (i < ps->n && ps->p[i] >= '0' && ps->p[i] <= '9') {
            b = b * 10 + (ps->p[i++] - '0');
            has_b = true;
            if (b > 100000) return false;
        }
    }
    if (i >= ps->n || ps->p[i] != '}' || (!has_a && !has_b)) return false;
    *min = has_a ? (uint32_t)a : 0;
    *max = comma ? (has_b ? (uint32_t)b : RX_INF) : (uint32_t)a;
    if (*max < *min) return false;
    ps->i = i + 1;
    return true;
}

static vkl_status rx_parse_seq(rx_parser *ps, bool icase, rx_frag *out) {
    out->head = out->tail = -1;
    vkl_status st;
    while (ps->i < ps->n && ps->p[ps->i] != '|' && ps->p[ps->i] != ')') {
        uint32_t c = ps->p[ps->i];
        rx_frag atom = {-1, -1};
        size_t atom_at = ps->i;
        if (c == '(') {
            ps->i++;
            bool sub_icase = icase;
            int kind = -1; /* -1 plain group, else LOOK/ATOMIC */
            bool neg = false;
            if (ps->i < ps->n && ps->p[ps->i] == '?') {
                ps->i++;
                uint32_t d = ps->i < ps->n ? ps->p[ps->i] : 0;
                if (d == ':') ps->i++;
                else if (d == '=' || d == '!') {
                    kind = RX_LOOK;
                    neg = d == '!';
                    ps->i++;
                } else if (d == '>') {
                    kind = RX_ATOMIC;
                    ps->i++;
                } else if (d == 'P' || d == '<') {
                    if (d == 'P') ps->i++;
                    if (ps->i >= ps->n || ps->p[ps->i] != '<') return rx_unsupported(ps, "this group syntax");
                    if (ps->i + 1 < ps->n && (ps->p[ps->i + 1] == '=' || ps->p[ps->i + 1] == '!'))
                        return rx_unsupported(ps, "look-behind");
                    while (ps->i < ps->n && ps->p[ps->i] != '>') ps->i++;
                    if (ps->i >= ps->n) return rx_unsupported(ps, "an unterminated group name");
                    ps->i++;
                } else {
                    /* flags: (?i) (?-i) (?i:...) */
                    bool on = true, any = false;
                    while (ps->i < ps->n && ps->p[ps->i] != ':' && ps->p[ps->i] != ')') {
                        uint32_t f = ps->p[ps->i++];
                        if (f == '-') on = false;
                        else if (f == 'i') sub_icase = on;
                        else return rx_unsupported(ps, "a group flag other than i");
                        any = true;
                    }
                    if (ps->i >= ps->n || !any) return rx_unsupported(ps, "this group syntax");
                    if (ps->p[ps->i] == ')') {
                        /* (?i) sets the flag for the rest of the enclosing group */
                        ps->i++;
                        icase = sub_icase;
                        continue;
                    }
                    ps->i++;
                }
            }
            if (++ps->depth > 100) return rx_unsupported(ps, "nesting deeper than 100 groups");
            rx_frag inner;
            if ((st = rx_parse_alt(ps, sub_icase, &inner))) return st;
            ps->depth--;
            if (ps->i >= ps->n || ps->p[ps->i] != ')') return rx_unsupported(ps, "an unbalanced '('");
            ps->i++;
            if (kind >= 0) {
                int32_t nd = -1;
                if ((st = rx_new_node(ps, (uint8_t)kind, &nd))) return st;
                ps->re->nodes[nd].child = inner.head;
                ps->re->nodes[nd].neg = neg;
                atom.head = atom.tail = nd;
            } else {
                atom = inner;
            }
        } else if (c == '[') {
            ps->i++;
            int32_t nd = -1;
            if ((st = rx_parse_class(ps, icase, &nd))) return st;
            atom.head = atom.tail = nd;
        } else if (c == '.') {
            ps->i++;
            int32_t nd = -1;
            if ((st = rx_set_node(ps, (rx_item){RXI_NOT_NL, false, 0, 0, 0}, false, &nd))) return st;
            atom.head = atom.tail = nd;
        } else if (c == '^' || c == '$') {
            ps->i++;
            int32_t nd = -1;
            if ((st = rx_new_node(ps, c == '^' ? RX_BOL : RX_EOL, &nd))) return st;
            atom.head = atom.tail = nd;
        } else if (c == '*' || c == '+' || c == '?') {
            return rx_unsupported(ps, "a quantifier with nothing to repeat");
        } else {
            ps->i++;
            uint32_t cp = c;
            if (c == '\\') {
                if (ps->i < ps->n && (ps->p[ps->i] == 'A' || ps->p[ps->i] == 'z' || ps->p[ps->i] == 'Z')) {
                    uint32_t e = ps->p[ps->i++];
                    int32_t nd = -1;
                    if ((st = rx_new_node(ps, e == 'A' ? RX_BOT : e == 'z' ? RX_EOT : RX_EOT_NL, &nd))) return st;
                    atom.head = atom.tail = nd;
                    goto linked;
                }
                rx_item it;
                bool is_item;
                if ((st = rx_escape(ps, false, &cp, &it, &is_item))) return st;
                if (is_item) {
                    int32_t nd = -1;
                    if ((st = rx_set_node(ps, it, icase, &nd))) return st;
                    atom.head = atom.tail = nd;
                    goto quantify;
                }
            }
            int32_t nd = -1;
            if ((st = rx_set_node(ps, (rx_item){RXI_RANGE, false, cp, cp, 0}, icase, &nd))) return st;
            atom.head = atom.tail = nd;
        }
    quantify:
        if (ps->i < ps->n) {
            uint32_t q = ps->p[ps->i];
            uint32_t min = 0, max = 0;
            bool is_q = true;
            if (q == '*') min = 0, max = RX_INF, ps->i++;
            else if (q == '+') min = 1, max = RX_INF, ps->i++;
            else if (q == '?') min = 0, max = 1, ps->i++;
            else if (q == '{') is_q = rx_parse_braces(ps, &min, &max);
            else is_q = false;
            if (is_q) {
                if (atom.head < 0) continue; /* a repeated empty group matches empty */
                uint8_t mode = RX_GREEDY;
                if (ps->i < ps->n && ps->p[ps->i] == '?') mode = RX_LAZY, ps->i++;
                else if (ps->i < ps->n && ps->p[ps->i] == '+') mode = RX_POSSESSIVE, ps->i++;
                if (ps->i < ps->n && (ps->p[ps->i] == '*' || ps->p[ps->i] == '+' || ps->p[ps->i] == '?' ||
                                      (ps->p[ps->i] == '{' && q != '{')))
                    return rx_unsupported(ps, "a repeated quantifier");
                int32_t rep;
                if ((st = rx_new_node(ps, RX_REPEAT, &rep))) return st;
                rx_node *r = &ps->re->nodes[rep];
                r->child = atom.head;
                r->min = min;
                r->max = max;
                r->simple = atom.head == atom.tail && ps->re->nodes[atom.head].kind == RX_SET;
                r->mode = mode;
                if (mode == RX_POSSESSIVE && !r->simple) {
                    /* X*+ is (?>X*) */
                    r->mode = RX_GREEDY;
                    int32_t at;
                    if ((st = rx_new_node(ps, RX_ATOMIC, &at))) return st;
                    ps->re->nodes[at].child = rep;
                    rep = at;
                }
                atom.head = atom.tail = rep;
            }
        }
    linked:
        (void)atom_at;
        if (atom.head < 0) continue;
        if (out->head < 0) out->head = atom.head;
        else ps->re->nodes[out->tail].next = atom.head;
        out->tail = atom.tail;
    }
    return VKL_OK;
}

static vkl_status rx_parse_alt(rx_parser *ps, bool icase, rx_frag *out) {
    rx_frag first;
    vkl_status st = rx_parse_seq(ps, icase, &first);
    if (st) return st;
    if (ps->i >= ps->n || ps->p[ps->i] != '|') {
        *out = first;
        return VKL_OK;
    }
    /* Collect the alternatives locally: nested groups add their own. */
    int32_t *heads = NULL;
    size_t n = 0, cap = 0;
    if ((st = tok_grow(ps->ctx, (void **)&heads, &cap, 4, sizeof(int32_t)))) return st;
    heads[n++] = first.head;
    while (ps->i < ps->n && ps->p[ps->i] == '|') {
        ps->i++;
        rx_frag f;
        if ((st = rx_parse_seq(ps, icase, &f))) goto done;
        if ((st = tok_grow(ps->ctx, (void **)&heads, &cap, n + 1, sizeof(int32_t)))) goto done;
        heads[n++] = f.head;
    }
    tok_regex *re = ps->re;
    if ((st = tok_grow(ps->ctx, (void **)&re->alts, &re->alts_cap, re->n_alts + n, sizeof(int32_t)))) goto done;
    int32_t nd = -1;
    if ((st = rx_new_node(ps, RX_ALT, &nd))) goto done;
    re->nodes[nd].child = (int32_t)re->n_alts;
    re->nodes[nd].n_alts = (uint32_t)n;
    memcpy(re->alts + re->n_alts, heads, n * sizeof(int32_t));
    re->n_alts += n;
    out->head = out->tail = nd;
done:
    vkl_free(ps->ctx, heads);
    return st;
}

vkl_status tok_regex_compile(vkl_context *ctx, const char *pattern, size_t len, tok_regex **out) {
    *out = NULL;
    if (!tok_utf8_is_valid(pattern, len)) return vkl_fail(ctx, VKL_ERR_FORMAT, "regex pattern is not valid UTF-8");
    tok_regex *re = vkl_calloc(ctx, 1, sizeof(*re));
    if (!re) return VKL_ERR_OUT_OF_MEMORY;
    uint32_t *cps = NULL;
    size_t *offs = NULL, cps_cap = 0, offs_cap = 0, n = 0;
    vkl_status st = tok_utf8_to_cps(ctx, pattern, len, &cps, &cps_cap, &offs, &offs_cap, &n);
    if (!st) {
        rx_parser ps = {ctx, re, cps, n, 0, pattern, len, 0};
        rx_frag f;
        st = rx_parse_alt(&ps, false, &f);
        if (!st && ps.i < ps.n) st = rx_unsupported(&ps, "an unbalanced ')'");
        re->root = f.head;
    }
    vkl_free(ctx, cps);
    vkl_free(ctx, offs);
    if (st) {
        tok_regex_free(ctx, re);
        return st;
    }
    *out = re;
    return VKL_OK;
}

void tok_regex_free(vkl_context *ctx, tok_regex *re) {
    if (!re) return;
    vkl_free(ctx, re->nodes);
    vkl_free(ctx, re->sets);
    vkl_free(ctx, re->items);
    vkl_free(ctx, re->alts);
    vkl_free(ctx, re);
}

/* ---- matching ------------------------------------------------------------- */

enum { K_SEQ, K_REP };

typedef struct rx_k {
    int kind;
    int32_t node; /* K_SEQ: where to go on; K_REP: the repeat */
    uint32_t count;
    size_t start;
    const struct rx_k *next;
} rx_k;

typedef struct rx_state {
    const tok_regex *re;
    const uint32_t *cps;
    size_t n;
    size_t end;
    uint32_t steps;
    int depth;
    bool err;
} rx_state;

static bool rx_match(rx_state *st, int32_t n, size_t pos, const rx_k *k);

static bool rx_rep(rx_state *st, int32_t rep, uint32_t count, size_t pos, size_t last_start, const rx_k *k) {
    const rx_node *nd = &st->re->nodes[rep];
    /* An iteration that matched empty could repeat forever: stop looping. */
    if (pos == last_start) return rx_match(st, nd->next, pos, k);
    rx_k kk = {K_REP, rep, count + 1, pos, k};
    if (nd->mode == RX_LAZY) {
        if (count >= nd->min && rx_match(st, nd->next, pos, k)) return true;
        if (st->err) return false;
        return count < nd->max && rx_match(st, nd->child, pos, &kk);
    }
    if (count < nd->max && rx_match(st, nd->child, pos, &kk)) return true;
    if (st->err) return false;
    return count >= nd->min && rx_match(st, nd->next, pos, k);
}

static bool rx_match(rx_state *st, int32_t n, size_t pos, const rx_k *k) {
    const tok_regex *re = st->re;
    if (++st->depth > RX_DEPTH_LIMIT) {
        st->err = true;
        st->depth--;
        return false;
    }
    bool ok = false;
    for (;;) {
        if (++st->steps > RX_STEP_LIMIT) {
            st->err = true;
            break;
        }
        if (n < 0) {
            if (!k) {
                st->end = pos;
                ok = true;
                break;
            }
            if (k->kind == K_SEQ) {
                n = k->node;
                k = k->next;
                continue;
            }
            ok = rx_rep(st, k->node, k->count, pos, k->start, k->next);
            break;
        }
        const rx_node *nd = &re->nodes[n];
        if (nd->kind == RX_SET) {
            if (pos < st->n && rx_set_test(re, nd->set, st->cps[pos])) {
                pos++;
                n = nd->next;
                continue;
            }
            break;
        }
        if (nd->kind == RX_REPEAT && nd->simple) {
            uint32_t set = re->nodes[nd->child].set;
            size_t room = st->n - pos, lim = nd->max < room ? nd->max : room, r = 0;
            if (nd->mode == RX_LAZY) {
                while (r < nd->min && r < lim && rx_set_test(re, set, st->cps[pos + r])) r++;
                if (r < nd->min) break;
                for (;;) {
                    if (rx_match(st, nd->next, pos + r, k)) {
                        ok = true;
                        break;
                    }
                    if (st->err || r >= lim || !rx_set_test(re, set, st->cps[pos + r])) break;
                    r++;
                }
                break;
            }
            while (r < lim && rx_set_test(re, set, st->cps[pos + r])) r++;
            if (r < nd->min) break;
            if (nd->mode == RX_POSSESSIVE) {
                pos += r;
                n = nd->next;
                continue;
            }
            if (nd->next < 0 && !k) { /* nothing follows: the longest run wins */
                st->end = pos + r;
                ok = true;
                break;
            }
            for (size_t j = r + 1; j-- > nd->min;) {
                if (rx_match(st, nd->next, pos + j, k)) {
                    ok = true;
                    break;
                }
                if (st->err) break;
            }
            break;
        }
        switch (nd->kind) {
        case RX_ALT: {
            rx_k kk = {K_SEQ, nd->next, 0, 0, k};
            const rx_k *kp = nd->next >= 0 ? &kk : k;
            for (uint32_t a = 0; a < nd->n_alts && !ok && !st->err; a++)
                ok = rx_match(st, re->alts[nd->child + (int32_t)a], pos, kp);
            goto out;
        }
        case RX_REPEAT: ok = rx_rep(st, n, 0, pos, SIZE_MAX, k); goto out;
        case RX_LOOK: {
            size_t save = st->end;
            bool m = rx_match(st, nd->child, pos, NULL);
            st->end = save;
            if (st->err || m == nd->neg) goto out;
            n = nd->next;
            continue;
        }
        case RX_ATOMIC: {
            size_t save = st->end;
            if (!rx_match(st, nd->child, pos, NULL)) goto out;
            pos = st->end;
            st->end = save;
            n = nd->next;
            continue;
        }
        case RX_BOL:
            if (pos != 0 && st->cps[pos - 1] != '\n') goto out;
            break;
        case RX_EOL:
            if (pos != st->n && st->cps[pos] != '\n') goto out;
            break;
        case RX_BOT:
            if (pos != 0) goto out;
            break;
        case RX_EOT:
            if (pos != st->n) goto out;
            break;
        default: /* RX_EOT_NL */
            if (pos != st->n && !(pos + 1 == st->n && st->cps[pos] == '\n')) goto out;
            break;
        }
        n = nd->next;
    }
out:
    st->depth--;
    return ok;
}

vkl_status tok_regex_find_all(vkl_context *ctx, const tok_regex *re, const uint32_t *cps, size_t n, tok_spans *out) {
    out->n = 0;
    rx_state st = {re, cps, n, 0, 0, 0, false};
    size_t pos = 0;
    while (pos < n) {
        size_t s = pos;
        bool found = false;
        for (; s <= n; s++) {
            st.steps = 0;
            st.depth = 0;
            if (rx_match(&st, re->root, s, NULL)) {
                found = true;
                break;
            }
            if (st.err) break;
        }
        if (st.err)
            return vkl_fail(ctx, VKL_ERR_UNSUPPORTED,
                            "regex match needs more than %u backtracking steps or nesting %d at character %zu",
                            RX_STEP_LIMIT, RX_DEPTH_LIMIT, s);
        if (!found) break;
        if (st.end == s) { /* empty match: not a piece; go on after it */
            pos = s + 1;
            continue;
        }
        vkl_status e = tok_spans_push(ctx, out, s, st.end);
        if (e) return e;
        pos = st.end;
    }
    return VKL_OK;
}
