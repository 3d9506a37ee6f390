/*
 * stats/xml.c - malloc_info()'s XML, in glibc's layout (one heap): the free
 * objects of each cache as a <size> line (from the previous class + 1 to the
 * slot size, count and bytes of free slots), the totals of free objects
 * ("rest") and of huge blocks ("mmap"), and the mapped bytes as the
 * system/aspace sizes.
 */
#include "stats.h"

#define U(v) ((unsigned long long)(v))

static void xml_heap_totals(struct pc_out *o, const struct pc_stats_snapshot *s,
			    uint64_t free_count, uint64_t free_bytes)
{
	pc_out_printf(o, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
	pc_out_printf(o, "<total type=\"rest\" count=\"%llu\" size=\"%llu\"/>\n", U(free_count),
		      U(free_bytes));
	(void)s;
}

static void xml_system(struct pc_out *o, uint64_t mapped)
{
	pc_out_printf(o, "<system type=\"current\" size=\"%llu\"/>\n", U(mapped));
	pc_out_printf(o, "<system type=\"max\" size=\"%llu\"/>\n", U(mapped));
	pc_out_printf(o, "<aspace type=\"total\" size=\"%llu\"/>\n", U(mapped));
	pc_out_printf(o, "<aspace type=\"mprotect\" size=\"%llu\"/>\n", U(mapped));
}

void pc_stats_xml(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	uint64_t free_count = 0, free_bytes = 0, from = 1;
	pc_out_printf(o, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
	for (unsigned i = 0; i < s->nr_caches; i++) {
		const struct pc_stats_cache *c = &s->caches[i];
		uint64_t n = c->num_objs - PC_MIN(c->num_objs, c->active_objs);
		pc_out_printf(o, "<size from=\"%llu\" to=\"%llu\" total=\"%llu\" count=\"%llu\"/>\n",
			      U(from), U(c->objsize), U(n * c->objsize), U(n));
		from = c->objsize + 1;
		free_count += n;
		free_bytes += n * c->objsize;
	}
	pc_out_printf(o, "</sizes>\n");
	xml_heap_totals(o, s, free_count, free_bytes);
	xml_system(o, s->totals.mapped);
	pc_out_printf(o, "</heap>\n");
	xml_heap_totals(o, s, free_count, free_bytes);
	pc_out_printf(o, "<total type=\"mmap\" count=\"%llu\" size=\"%llu\"/>\n",
		      U(s->totals.huge_blocks), U(s->totals.huge_bytes));
	xml_system(o, s->totals.mapped);
	pc_out_printf(o, "</malloc>\n");
}
