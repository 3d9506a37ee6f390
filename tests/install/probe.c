/* Prints "pcmalloc" when malloc is pcmalloc's, "other" otherwise: pcmalloc
 * rounds a 129-byte request up to its 160-byte size class (glibc: 136). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef WITH_API
#include <pcmalloc.h>
#endif

int main(void)
{
	void *volatile p = malloc(129);
	size_t usable = malloc_usable_size(p);
	free(p);
#ifdef WITH_API
	long v = -1;
	if (pcmalloc_ctl_get("vm.pcp_batch_scale_max", &v) != 0 || v != 5)
		return 2;
	void *q = pc_malloc(10);
	pc_free(q);
#endif
	puts(usable == 160 ? "pcmalloc" : "other");
	return 0;
}
