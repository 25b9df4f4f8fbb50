/* Internal types of the tokenizer: the pipeline stages as tagged structs read
 * from tokenizer.json, the hash maps, and the scratch the encoder reuses. */
#ifndef VKL_TOK_INTERNAL_H
#define VKL_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "tokenizer.h"

/* ---- growable buffers ---------------------------------------------------- */

typedef struct tok_buf {
    char *p;
    size_t n, cap;
} tok_buf;

typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
} tok_ids;

/* [start, end) spans, in whatever unit the producer says. */
typedef struct tok_span {
    size_t start, end;
} tok_span;

typedef struct tok_spans {
    tok_span *v;
    size_t n, cap;
} tok_spans;

vkl_status tok_buf_reserve(vkl_context *ctx, tok_buf *b, size_t extra);
vkl_status tok_buf_append(vkl_context *ctx, tok_buf *b, const void *data, size_t n);
vkl_status tok_buf_putc(vkl_context *ctx, tok_buf *b, char c);
vkl_status tok_buf_put_cp(vkl_context *ctx, tok_buf *b, uint32_t cp);
void tok_buf_free(vkl_context *ctx, tok_buf *b);
vkl_status tok_ids_push(vkl_context *ctx, tok_ids *v, int32_t id);
vkl_status tok_ids_append(vkl_context *ctx, tok_ids *v, const int32_t *ids, size_t n);
void tok_ids_free(vkl_context *ctx, tok_ids *v);
vkl_status tok_spans_push(vkl_context *ctx, tok_spans *v, size_t start, size_t end);
void tok_spans_free(vkl_context *ctx, tok_spans *v);
/* Grow *p (of *cap elements of `size` bytes) to hold at least `need`. */
vkl_status tok_grow(vkl_context *ctx, void **p, size_t *cap, size_t need, size_t size);

/* ---- hash maps ----------------------------------------------------------- */

/* String -> int32; keys are copied into a pool. */
typedef struct tok_strmap_entry {
    uint32_t off, len;
    int32_t val;
    uint32_t hash;
} tok_strmap_entry;

typedef struct tok_strmap {
    tok_buf pool;
    tok_strmap_entry *e;
    size_t n, e_cap;
    uint32_t *slots; /* entry index + 1; 0 is empty */
    size_t mask;
} tok_strmap;

vkl_status tok_strmap_init(vkl_context *ctx, tok_strmap *m, size_t expected);
/* Insert; an existing key keeps its value unless `overwrite`. */
vkl_status tok_strmap_put(vkl_context *ctx, tok_strmap *m, const char *k, size_t n, int32_t val, bool overwrite);
bool tok_strmap_get(const tok_strmap *m, const char *k, size_t n, int32_t *val);
void tok_strmap_free(vkl_context *ctx, tok_strmap *m);
uint32_t tok_hash_bytes(const void *p, size_t n);

/* (id, id) -> (rank, new id): the BPE merges. */
typedef struct tok_pairmap {
    uint64_t *keys; /* UINT64_MAX = empty */
    uint64_t *vals; /* rank << 32 | new id */
    size_t n, mask;
} tok_pairmap;

vkl_status tok_pairmap_init(vkl_context *ctx, tok_pairmap *m, size_t expected);
void tok_pairmap_put(tok_pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t new_id);
bool tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id);
void tok_pairmap_free(vkl_context *ctx, tok_pairmap *m);

/* A vocabulary: token string <-> id. */
typedef struct tok_vocab {
    tok_strmap map;
    uint32_t *by_id; /* id -> entry index + 1 */
    size_t n_ids;    /* max id + 1 */
} tok_vocab;

vkl_status tok_vocab_index_ids(vkl_context *ctx, tok_vocab *v);
const char *tok_vocab_token(const tok_vocab *v, int32_t id, size_t *len);
void tok_vocab_free(vkl_context *ctx, tok_vocab *v);

/* ---- UTF-8 and Unicode classes (utf8proc) -------------------------------- */

/* Decode one code point of valid UTF-8 at s[*i], advancing *i. */
uint32_t tok_utf8_next(const char *s, size_t n, size_t *i);
/* Length of the valid UTF-8 sequence at s[i], or 0 if it is not valid. */
size_t tok_utf8_valid_len(const unsigned char *s, size_t n, size_t i);
/* Copy with every maximal invalid subpart replaced by U+FFFD (Rust's
 * from_utf8_lossy). Returns whether the input was valid. */
vkl_status tok_utf8_lossy(vkl_context *ctx, const char *s, size_t n, tok_buf *out, bool *was_valid);
bool tok_utf8_is_valid(const char *s, size_t n);
size_t tok_utf8_encode(uint32_t cp, char out[4]);
/* Decode a valid UTF-8 string into code points and the byte offset of each
 * (offs has n_cps + 1 entries). */
vkl_status tok_utf8_to_cps(vkl_context *ctx, const char *s, size_t n, uint32_t **cps, size_t *cps_cap,
                           size_t **offs, size_t *offs_cap, size_t *n_cps);

/* Unicode White_Space (what Oniguruma's \s and Rust's is_whitespace test). */
bool tok_is_space(uint32_t cp);
/* Python str.isspace(): White_Space plus U+001C..U+001F. */
bool tok_is_py_space(uint32_t cp);
bool tok_is_letter(uint32_t cp);
bool tok_is_number(uint32_t cp);
bool tok_is_alnum(uint32_t cp);
bool tok_is_punct(uint32_t cp);
int tok_category(uint32_t cp); /* utf8proc_category */
uint32_t tok_tolower(uint32_t cp);
uint32_t tok_toupper(uint32_t cp);
/* Unicode simple case folding (what case-insensitive regex matching compares). */
uint32_t tok_casefold(uint32_t cp);

/* ---- the Split / Replace pattern matcher --------------------------------- */

typedef struct tok_regex tok_regex;

/* Compile the subset of Oniguruma syntax the tokenizer.json patterns use:
 * literals, classes with \p{..}, \s \d \w, alternation, (?:) (?i:) (?=) (?!)
 * groups, greedy/lazy/possessive quantifiers. Anything else is
 * VKL_ERR_UNSUPPORTED naming the construct and the pattern. */
vkl_status tok_regex_compile(vkl_context *ctx, const char *pattern, size_t len, tok_regex **out);
void tok_regex_free(vkl_context *ctx, tok_regex *re);
/* Non-overlapping leftmost matches over code points, as onig's find_iter;
 * spans are in code point indices. Empty matches are not reported. */
vkl_status tok_regex_find_all(vkl_context *ctx, const tok_regex *re, const uint32_t *cps, size_t n, tok_spans *out);

/* A pattern of tokenizer.json: {"String": s} or {"Regex": r}. */
typedef struct tok_pattern {
    char *str; /* literal (String) */
    size_t len;
    tok_regex *re; /* Regex, else NULL */
} tok_pattern;

/* ---- pipeline pieces ----------------------------------------------------- */

/* A piece of text during encoding: bytes [off, off+len) of its list's text,
 * or a token already decided (id >= 0, no text). */
enum { TOK_PIECE_AT_START = 1 }; /* begins at offset 0 of the original text */

typedef struct tok_piece {
    size_t off, len;
    int32_t id;
    uint32_t flags;
} tok_piece;

typedef struct tok_pieces {
    tok_buf text;
    tok_piece *v;
    size_t n, cap;
} tok_pieces;

vkl_status tok_pieces_push(vkl_context *ctx, tok_pieces *l, const char *s, size_t n, int32_t id, uint32_t flags);
void tok_pieces_clear(tok_pieces *l);
void tok_pieces_free(vkl_context *ctx, tok_pieces *l);

/* Scratch the encoder reuses between calls (no allocation once warm). */
typedef struct tok_scratch {
    tok_pieces a, b;
    tok_buf text, tmp, tmp2;
    uint32_t *cps;
    size_t cps_cap;
    size_t *offs;
    size_t offs_cap;
    tok_spans spans, spans2;
    tok_ids ids, ids2;
    /* BPE */
    void *sym;
    size_t sym_cap;
    void *heap;
    size_t heap_cap;
    /* Unigram */
    double *best;
    size_t best_cap;
    int64_t *back;
    size_t back_cap;
} tok_scratch;

/* A byte trie: edges (node, byte) -> child in a hash map, so a node with
 * thousands of children (a Unigram vocabulary's root) is still one probe. */
typedef struct tok_trie {
    int32_t *token; /* per node: the value stored there, or -1 */
    size_t n, cap;
    tok_pairmap edges; /* (node, byte) -> (0, child) */
    bool first_byte[256];
} tok_trie;

/* ---- added tokens -------------------------------------------------------- */

typedef struct tok_added {
    char *content;
    size_t len;
    int32_t id;
    bool special, lstrip, rstrip, single_word, normalized;
} tok_added;

/* ---- normalizers, pre-tokenizers, post-processors, decoders -------------- */

typedef enum tok_norm_kind {
    TOK_NORM_NFC,
    TOK_NORM_NFD,
    TOK_NORM_NFKC,
    TOK_NORM_NFKD,
    TOK_NORM_LOWERCASE,
    TOK_NORM_PREPEND,
    TOK_NORM_REPLACE,
    TOK_NORM_STRIP,
    TOK_NORM_STRIP_ACCENTS,
    TOK_NORM_SEQUENCE
} tok_norm_kind;

typedef struct tok_normalizer {
    tok_norm_kind kind;
    char *str; /* Prepend: text; Replace: content */
    size_t str_len;
    tok_pattern pattern; /* Replace */
    bool left, right;    /* Strip */
    struct tok_normalizer *items;
    size_t n_items;
} tok_normalizer;

typedef enum tok_split_behavior {
    TOK_SPLIT_REMOVED,
    TOK_SPLIT_ISOLATED,
    TOK_SPLIT_MERGED_WITH_PREVIOUS,
    TOK_SPLIT_MERGED_WITH_NEXT,
    TOK_SPLIT_CONTIGUOUS
} tok_split_behavior;

typedef enum tok_prepend_scheme { TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST, TOK_PREPEND_NEVER } tok_prepend_scheme;

typedef enum tok_pre_kind {
    TOK_PRE_BYTELEVEL,
    TOK_PRE_SPLIT,
    TOK_PRE_METASPACE,
    TOK_PRE_DIGITS,
    TOK_PRE_WHITESPACE,
    TOK_PRE_WHITESPACE_SPLIT,
    TOK_PRE_PUNCTUATION,
    TOK_PRE_SEQUENCE
} tok_pre_kind;

typedef struct tok_pretok {
    tok_pre_kind kind;
    bool add_prefix_space, use_regex; /* ByteLevel */
    tok_pattern pattern;              /* Split */
    tok_split_behavior behavior;      /* Split, Punctuation */
    bool invert;
    uint32_t replacement; /* Metaspace */
    tok_prepend_scheme prepend_scheme;
    bool split;
    bool individual_digits; /* Digits */
    struct tok_pretok *items;
    size_t n_items;
} tok_pretok;

typedef enum tok_post_kind {
    TOK_POST_TEMPLATE,  /* TemplateProcessing, Bert, Roberta: ids around A */
    TOK_POST_NOOP,      /* ByteLevel: offsets only */
    TOK_POST_SEQUENCE
} tok_post_kind;

typedef struct tok_post {
    tok_post_kind kind;
    int32_t *single; /* ids, TOK_POST_SEQ_A where the sequence goes */
    size_t n_single;
    struct tok_post *items;
    size_t n_items;
} tok_post;
#define TOK_POST_SEQ_A (-1)

typedef enum tok_dec_kind {
    TOK_DEC_BYTELEVEL,
    TOK_DEC_METASPACE,
    TOK_DEC_BYTEFALLBACK,
    TOK_DEC_FUSE,
    TOK_DEC_STRIP,
    TOK_DEC_REPLACE,
    TOK_DEC_WORDPIECE,
    TOK_DEC_BPE_SUFFIX,
    TOK_DEC_SEQUENCE
} tok_dec_kind;

typedef struct tok_decoder {
    tok_dec_kind kind;
    uint32_t cp; /* Metaspace replacement; Strip content */
    tok_prepend_scheme prepend_scheme;
    size_t start, stop;     /* Strip */
    tok_pattern pattern;    /* Replace */
    char *str;              /* Replace content; WordPiece prefix; BPEDecoder suffix */
    size_t str_len;
    bool cleanup;           /* WordPiece */
    struct tok_decoder *items;
    size_t n_items;
} tok_decoder;

/* ---- models ------------------------------------------------------------- */

typedef enum tok_model_kind { TOK_MODEL_BPE, TOK_MODEL_UNIGRAM, TOK_MODEL_WORDLEVEL } tok_model_kind;

typedef struct tok_bpe {
    tok_pairmap merges;
    int32_t unk_id; /* -1: no unk token */
    bool fuse_unk, byte_fallback, ignore_merges;
    char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix (NULL = none) */
    size_t prefix_len, suffix_len;
    int32_t byte_ids[256]; /* "<0xXX>" tokens, -1 if absent */
    int32_t *char_ids;     /* single code point < 0x800 -> id; -1 not in vocab; -2 not cached */
} tok_bpe;

typedef struct tok_unigram {
    double *scores; /* by id */
    int32_t unk_id;
    bool byte_fallback;
    double unk_score;
    tok_trie trie; /* pieces; node token = id */
    int32_t byte_ids[256];
} tok_unigram;

/* ---- the tokenizer ------------------------------------------------------- */

struct vkl_tokenizer {
    vkl_context *ctx;
    tok_model_kind model;
    tok_vocab vocab; /* the model's */
    tok_bpe bpe;
    tok_unigram uni;

    tok_added *added;
    size_t n_added;
    int32_t *added_by_id; /* id -> added index, over [0, vocab_size) */
    tok_strmap added_map; /* content -> added index */
    tok_trie raw_trie, norm_trie;

    tok_normalizer *normalizer;
    tok_pretok *pretok;
    tok_post *post;
    tok_decoder *decoder;

    /* byte-level alphabet: byte -> UTF-8 of its stand-in character, and back */
    char bl_utf8[256][2];
    uint8_t bl_len[256];
    int16_t bl_rev[324];
    tok_regex *gpt2_re; /* ByteLevel use_regex */

    size_t vocab_size;
    int32_t bos_id, eos_id;
    vkl_chat_template *chat;

    tok_scratch s;
};

/* tokenizer_json.c */
vkl_status tok_parse_tokenizer_json(vkl_tokenizer *t, const char *json, size_t len);
vkl_status tok_parse_config_json(vkl_tokenizer *t, const char *json, size_t len);
void tok_free_components(vkl_tokenizer *t);
vkl_status tok_pattern_compile(vkl_context *ctx, const char *s, size_t n, bool regex, tok_pattern *p);
void tok_pattern_free(vkl_context *ctx, tok_pattern *p);
/* Matches of a pattern in valid UTF-8 s[0..n), as byte spans. */
vkl_status tok_pattern_find(vkl_tokenizer *t, const tok_pattern *p, const char *s, size_t n, tok_spans *out);

/* added_tokens.c */
/* max_bytes: the total length of everything that will be inserted. */
vkl_status tok_trie_init(vkl_context *ctx, tok_trie *tr, size_t max_bytes);
vkl_status tok_trie_insert(vkl_context *ctx, tok_trie *tr, const char *s, size_t n, int32_t token);
static inline int32_t tok_trie_child(const tok_trie *tr, int32_t node, unsigned char byte) {
    uint32_t rank;
    int32_t child;
    return tok_pairmap_get(&tr->edges, node, byte, &rank, &child) ? child : -1;
}
void tok_trie_free(vkl_context *ctx, tok_trie *tr);
vkl_status tok_added_build(vkl_tokenizer *t);
/* Split text on the added tokens of `trie`, appending pieces to out. */
vkl_status tok_added_split_text(vkl_tokenizer *t, const tok_trie *trie, const char *s, size_t n, uint32_t flags,
                                tok_pieces *out);
/* Split every untokenized piece of `in` on the added tokens of `trie`. */
vkl_status tok_added_split(vkl_tokenizer *t, const tok_trie *trie, const tok_pieces *in, tok_pieces *out);

/* normalizers.c */
vkl_status tok_normalize(vkl_tokenizer *t, const tok_normalizer *nz, const char *s, size_t n, tok_buf *out);

/* pretokenizers.c */
vkl_status tok_pretokenize(vkl_tokenizer *t, const tok_pretok *pt, tok_pieces **in, tok_pieces **spare);
void tok_bytelevel_init(vkl_tokenizer *t);
/* Split-style delimiting of s by byte spans of matches (sorted, disjoint). */
vkl_status tok_split_by_spans(vkl_tokenizer *t, const char *s, size_t n, const tok_spans *matches,
                              tok_split_behavior behavior, bool invert, uint32_t flags, tok_pieces *out);

/* bpe.c, unigram.c */
vkl_status tok_bpe_tokenize(vkl_tokenizer *t, const char *w, size_t n, tok_ids *out);
vkl_status tok_unigram_tokenize(vkl_tokenizer *t, const char *w, size_t n, tok_ids *out);
vkl_status tok_wordlevel_tokenize(vkl_tokenizer *t, const char *w, size_t n, tok_ids *out);

/* postprocessors.c */
vkl_status tok_post_process(vkl_tokenizer *t, const tok_post *pp, const tok_ids *in, tok_ids *out);

/* decoders.c: tokens -> text. */
vkl_status tok_decode_tokens(vkl_tokenizer *t, const tok_decoder *d, tok_pieces *tokens, tok_buf *out);

#endif
