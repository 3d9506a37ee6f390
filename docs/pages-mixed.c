/* docs/pages-mixed.c - the mixed-size program of docs/pages.md (not built by
 * CMake): THREADS threads, 4000 live blocks each, log-uniform sizes in
 * [MIN, MAX] (default 8 B .. 128 KiB), one step in eight a realloc. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
static int steps = 400000;
static uint64_t rnd(uint64_t *s){ *s ^= *s<<13; *s ^= *s>>7; *s ^= *s<<17; return *s; }
static size_t lsize(uint64_t *s, double lo, double hi){ double u = (rnd(s)>>11)*(1.0/9007199254740992.0); return (size_t)exp(log(lo)+u*(log(hi)-log(lo))); }
static double LO=8, HI=131072;
static void *work(void *arg){ uint64_t s = (uintptr_t)arg*7919+1; void *slot[4000]={0};
 for(int i=0;i<steps;i++){ int k=rnd(&s)%4000; size_t n=lsize(&s,LO,HI);
  if(slot[k] && rnd(&s)%8==0){ slot[k]=realloc(slot[k],n); memset(slot[k],1,n<64?n:64);} else { free(slot[k]); slot[k]=malloc(n); memset(slot[k],1,n);} }
 for(int k=0;k<4000;k++) free(slot[k]); return 0; }
int main(int c,char**v){ int t=atoi(v[1]); if(c>2) steps=atoi(v[2]); if(c>4){LO=atof(v[3]);HI=atof(v[4]);} pthread_t th[64]; for(int i=0;i<t;i++) pthread_create(&th[i],0,work,(void*)(uintptr_t)(i+1)); for(int i=0;i<t;i++) pthread_join(th[i],0); return 0; }
