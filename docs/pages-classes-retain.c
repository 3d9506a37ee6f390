/* docs/pages-classes-retain.c - what stays resident after a program frees
 * its 8-32 KiB blocks (not built by CMake; docs/pages-medium.md, "Slab
 * classes above 8 KiB with slabs of 8 objects: measured, not landed").
 * N (2000) blocks of each size 10240 .. 32768, first and last byte written,
 * freed in a shuffled order, then one malloc/free pair of each size every
 * 10 ms for 16 s; prints RSS (KiB) live, right after the frees, and after.
 *   cc -O2 -o retain docs/pages-classes-retain.c && LD_PRELOAD=... ./retain 2000 NAME */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static long rss_kb(void){ long a,b; FILE*f=fopen("/proc/self/statm","r"); fscanf(f,"%ld %ld",&a,&b); fclose(f); return b*4; }
int main(int argc,char**argv){
  int n=argc>1?atoi(argv[1]):2000;
  static const size_t sz[]={10240,12288,14336,16384,20480,24576,28672,32768};
  enum{K=8}; char **p=malloc(sizeof(char*)*n*K);
  for(int i=0;i<n*K;i++){ size_t s=sz[i%K]; p[i]=malloc(s); p[i][0]=p[i][s-1]=1; }
  long live=rss_kb();
  unsigned r=12345; for(int i=n*K-1;i>0;i--){ r=r*1103515245+12345; int j=(r>>8)%(i+1); char*t=p[i];p[i]=p[j];p[j]=t; }
  for(int i=0;i<n*K;i++) free(p[i]);
  long freed=rss_kb();
  for(int t=0;t<1600;t++){ for(int k=0;k<K;k++){ void*q=malloc(sz[k]); free(q);} usleep(10000); }
  long after=rss_kb();
  printf("%s live %ld freed %ld after16s %ld KiB\n",argc>2?argv[2]:"",live,freed,after);
  return 0;
}
