/* docs/pages-asback.c - the address-space program of docs/pages.md (not built
 * by CMake): under RLIMIT_AS = LIMIT_MB (default 512), malloc ALLOC_MB
 * (default 400) of blocks of 4-64 KiB, free them all, then count the 8 MiB
 * mallocs that succeed (each touched); print the address space (VmSize) at
 * the peak, after the frees, and after the huge blocks are freed and
 * malloc_trim(0). gcc -O2 -fno-builtin; run
 * LD_PRELOAD=<lib> ./asback LIMIT_MB ALLOC_MB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <malloc.h>
static size_t vm_kb(void){ FILE*f=fopen("/proc/self/status","r"); char l[256]; size_t v=0; while(fgets(l,sizeof l,f)) if(!strncmp(l,"VmSize:",7)) v=strtoul(l+7,0,10); fclose(f); return v; }
int main(int argc,char**argv){
  size_t limit_mb = argc>1?atoi(argv[1]):512, alloc_mb = argc>2?atoi(argv[2]):400;
  struct rlimit rl={ (rlim_t)limit_mb<<20, (rlim_t)limit_mb<<20 };
  if(setrlimit(RLIMIT_AS,&rl)) { perror("setrlimit"); return 1; }
  size_t n = 0, cap = 1<<20, bytes=0; void **v = malloc(cap*sizeof *v);
  unsigned s=1;
  while (bytes < alloc_mb<<20) { s=s*1103515245+12345; size_t sz = 4096 + (s>>8)%(60*1024); void*p=malloc(sz); if(!p) break; memset(p,1,64); v[n++]=p; bytes+=sz; }
  size_t peak_vm = vm_kb();
  for(size_t i=0;i<n;i++) free(v[i]);
  size_t freed_vm = vm_kb();
  size_t k=0; void *h[4096];
  while(k<4096){ void*p=malloc(8<<20); if(!p) break; memset(p,2,8<<20); h[k++]=p; }
  printf("allocated %zu MB in %zu blocks, vm peak %zu MB, %zu MB after the frees, then %zu x 8 MiB = %zu MB huge", bytes>>20, n, peak_vm>>10, freed_vm>>10, k, k*8);
  for(size_t i=0;i<k;i++) free(h[i]);
  malloc_trim(0);
  printf(", %zu MB after freeing them and malloc_trim\n", vm_kb()>>10);
  return 0;
}
