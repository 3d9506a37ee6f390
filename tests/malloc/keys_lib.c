/* A library whose constructor creates 40 pthread keys, so that keys created
 * later (pcmalloc's thread-exit key among them) have indexes >= 32, for
 * which glibc's pthread_setspecific allocates (calloc). Preloaded before
 * pcmalloc by frontend/reentry. */
#include <pthread.h>

__attribute__((constructor)) static void make_keys(void)
{
	static pthread_key_t keys[40];
	for (int i = 0; i < 40; i++)
		pthread_key_create(&keys[i], NULL);
}
