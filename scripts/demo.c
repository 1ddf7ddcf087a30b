/*
 * The bundled demo workload (`make demo`): a word-frequency count over a
 * generated text, with a hash table, a sort and some string handling, so
 * the profile shows a handful of procedures in the program and in libc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 4096

struct word {
	char text[24];
	unsigned count;
	struct word *next;
};

static struct word *g_table[NBUCKETS];

__attribute__((noinline)) static unsigned hash_word(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

__attribute__((noinline)) static void count_word(const char *s)
{
	unsigned b = hash_word(s) % NBUCKETS;
	for (struct word *w = g_table[b]; w; w = w->next) {
		if (strcmp(w->text, s) == 0) {
			w->count++;
			return;
		}
	}
	struct word *w = calloc(1, sizeof(*w));
	snprintf(w->text, sizeof(w->text), "%s", s);
	w->count = 1;
	w->next = g_table[b];
	g_table[b] = w;
}

__attribute__((noinline)) static void make_word(char *out, unsigned long *seed)
{
	static const char syll[][4] = { "ka", "lo", "mi", "ne", "su", "ra", "to", "vi" };
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	int n = 1 + (int)((*seed >> 60) % 3);
	out[0] = 0;
	for (int i = 0; i < n; i++)
		strcat(out, syll[(*seed >> (8 * i + 20)) % 8]);
}

static int by_count(const void *a, const void *b)
{
	const struct word *x = *(struct word *const *)a, *y = *(struct word *const *)b;
	return x->count != y->count ? (x->count < y->count) - (x->count > y->count)
				    : strcmp(x->text, y->text);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 40000000;
	unsigned long seed = 42;
	char buf[32];
	for (long i = 0; i < n; i++) {
		make_word(buf, &seed);
		count_word(buf);
	}
	struct word *all[1024];
	int k = 0;
	for (int b = 0; b < NBUCKETS; b++)
		for (struct word *w = g_table[b]; w && k < 1024; w = w->next)
			all[k++] = w;
	qsort(all, (size_t)k, sizeof(all[0]), by_count);
	printf("%d distinct words; most frequent:", k);
	for (int i = 0; i < 5 && i < k; i++)
		printf(" %s(%u)", all[i]->text, all[i]->count);
	printf("\n");
	return 0;
}
