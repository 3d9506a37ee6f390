/*
 * stats/json.c - the JSON report: every number of the text report, field
 * names from the X-macro lists of stats.h (docs/statistics.md is the schema).
 * pcmalloc-top, pcmalloc-ctl and the benchmarks read only this.
 */
#include "stats.h"

#define U(v) ((unsigned long long)(v))

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(struct pc_out *o, const char *s)
{
	pc_out_printf(o, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			pc_out_printf(o, "\\%c", c);
		else if (c < 0x20)
			pc_out_printf(o, "\\u%04x", c);
		else
			pc_out_printf(o, "%c", c);
	}
	pc_out_printf(o, "\"");
}

static void json_tunables(struct pc_out *o)
{
	pc_out_printf(o, "\"tunables\":{");
	for (int i = 0; i < PC_OPT_COUNT; i++) {
		enum pc_option opt = (enum pc_option)i;
		char text[300];
		pc_out_printf(o, "%s", i ? "," : "");
		json_string(o, pc_option_name(opt));
		pc_out_printf(o, ":");
		if (pc_option_value_name(opt, pc_option_min(opt)) || pc_option_is_text(opt)) {
			pc_option_format(opt, text, sizeof(text));
			json_string(o, text);
		} else {
			pc_out_printf(o, "%ld", pc_option(opt));
		}
	}
	pc_out_printf(o, "}");
}

static void json_caches(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, ",\"caches\":[");
	for (unsigned i = 0; i < s->nr_caches; i++) {
		const struct pc_stats_cache *c = &s->caches[i];
		pc_out_printf(o, "%s{\"name\":", i ? "," : "");
		json_string(o, c->name);
#define PC_STATS_JSON_CACHE(f) pc_out_printf(o, ",\"" #f "\":%llu", U(c->f));
		PC_STATS_CACHE(PC_STATS_JSON_CACHE)
#undef PC_STATS_JSON_CACHE
		pc_out_printf(o, ",\"slub\":{");
		for (int k = 0; k < PC_SLAB_STAT_COUNT; k++)
			pc_out_printf(o, "%s\"%s\":%llu", k ? "," : "", pc_slab_stat_names[k],
				      U(c->slub[k]));
		pc_out_printf(o, "}}");
	}
	pc_out_printf(o, "]");
}

static void json_buckets(struct pc_out *o, const uint64_t *bucket)
{
	int last = -1;
	for (int i = 0; i < PC_LOCK_HIST_BUCKETS; i++)
		if (bucket[i])
			last = i;
	pc_out_printf(o, "[");
	for (int i = 0; i <= last; i++)
		pc_out_printf(o, "%s{\"low\":%llu,\"high\":%llu,\"count\":%llu}", i ? "," : "",
			      i == 0 ? 0ull : 1ull << i, (2ull << i) - 1, U(bucket[i]));
	pc_out_printf(o, "]");
}

static void json_locks(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, ",\"locks\":[");
	for (unsigned i = 0; i < s->nr_locks; i++) {
		const struct pc_stats_lock *r = &s->locks[i];
		pc_out_printf(o, "%s{\"name\":", i ? "," : "");
		json_string(o, r->name);
		pc_out_printf(o, ",\"class\":");
		json_string(o, r->cls);
		pc_out_printf(o, ",\"is_class\":%s", r->is_class ? "true" : "false");
#define PC_STATS_JSON_LOCK(f) pc_out_printf(o, ",\"" #f "\":%llu", U(r->f));
		PC_STATS_LOCK(PC_STATS_JSON_LOCK)
#undef PC_STATS_JSON_LOCK
		pc_out_printf(o, ",\"wait_share\":%llu.%06llu,\"wait_hist\":",
			      U(r->wait_share_ppm / 1000000), U(r->wait_share_ppm % 1000000));
		json_buckets(o, r->wait_hist);
		pc_out_printf(o, "}");
	}
	pc_out_printf(o, "]");
}

static void json_zones(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, ",\"zones\":[");
	for (unsigned i = 0; i < s->nr_zones; i++) {
		const struct pc_stats_zone *z = &s->zones[i];
		pc_out_printf(o, "%s{\"id\":%u", i ? "," : "", i);
#define PC_STATS_JSON_ZONE(f) pc_out_printf(o, ",\"" #f "\":%llu", U(z->f));
		PC_STATS_ZONE(PC_STATS_JSON_ZONE)
#undef PC_STATS_JSON_ZONE
		pc_out_printf(o, "}");
	}
	pc_out_printf(o, "]");
}

static void json_hists(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, ",\"histograms\":{");
	for (int i = 0; i < PC_STATS_HIST_COUNT; i++) {
		const struct pc_stats_hist *h = &s->hist[i];
		pc_out_printf(o, "%s\"%s\":{\"unit\":\"%s\",\"count\":%llu,\"sum\":%llu,"
			      "\"avg\":%llu,\"buckets\":", i ? "," : "", h->name, h->unit,
			      U(h->count), U(h->sum), U(h->count ? h->sum / h->count : 0));
		json_buckets(o, h->bucket);
		pc_out_printf(o, "}");
	}
	pc_out_printf(o, "}");
}

void pc_stats_json(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, "{\"version\":%d,\"pid\":%llu,\"time_ns\":%llu,\"stats_enabled\":%s,"
		      "\"truncated\":%s,", PC_STATS_VERSION, U(s->pid), U(s->time_ns),
		      s->enabled ? "true" : "false", s->truncated ? "true" : "false");
	json_tunables(o);
	pc_out_printf(o, ",\"totals\":{");
	const char *sep = "";
#define PC_STATS_JSON_TOTAL(f) pc_out_printf(o, "%s\"" #f "\":%llu", sep, U(s->totals.f)); sep = ",";
	PC_STATS_TOTALS(PC_STATS_JSON_TOTAL)
#undef PC_STATS_JSON_TOTAL
	pc_out_printf(o, "}");
	json_caches(o, s);
	json_locks(o, s);
	json_zones(o, s);
	json_hists(o, s);
	pc_out_printf(o, "}\n");
}
