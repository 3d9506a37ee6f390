/* docs/pages-halfidle.c - the fragmented idle program of docs/pages.md (not
 * built by CMake): malloc MB MiB (default 256) of blocks of 4-64 KiB, each
 * touched, free every other one, then idle 3 s printing the RSS every 0.5 s.
 * gcc -O2 -fno-builtin; LD_PRELOAD=<lib> PCMALLOC_VM_RELEASE_THREAD=1 ./halfidle MB */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static long rss_kb(void){ FILE*f=fopen("/proc/self/statm","r"); long a,b; fscanf(f,"%ld %ld",&a,&b); fclose(f); return b*4; }
int main(int argc,char**argv){ size_t mb=argc>1?atoi(argv[1]):256; size_t n=0,bytes=0; static void *v[1<<20]; unsigned s=7;
 while(bytes<(mb<<20)){ s=s*1103515245+12345; size_t sz=4096+(s>>8)%(60*1024); v[n]=malloc(sz); memset(v[n],1,sz); bytes+=sz; n++; }
 long peak=rss_kb(); for(size_t i=0;i<n;i+=2) free(v[i]); long after=rss_kb();
 printf("peak %ld KB, after freeing half %ld KB", peak, after);
 for(int t=0;t<6;t++){ usleep(500000); printf(", %.1fs %ld", (t+1)*0.5, rss_kb()); } printf("\n"); return 0; }
