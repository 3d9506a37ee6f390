/* docs/pages-classes-abc.c - Tests A, B and C of seed 002 in CPU time (not
 * built by CMake; docs/pages-medium.md, "Slab classes above 8 KiB, taken").
 * For each size, 11 rounds of: A allocate 10000 blocks, writing a byte of
 * each; B free them in the same order; C malloc, write a byte, free, 10000
 * times. Prints the median of each, in nanoseconds of this thread's CPU
 * time per operation (CLOCK_THREAD_CPUTIME_ID), which time spent waiting
 * for a CPU on a loaded machine does not count.
 *   cc -O2 -o abc docs/pages-classes-abc.c && LD_PRELOAD=... ./abc NAME */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  enum{N=10000,R=11};
  static void*v[N];
  size_t sizes[]={4096,8192,12288,16384,32768,49152};
  for(int s=0;s<6;s++){
    double A[R],B[R],C[R];
    for(int r=0;r<R;r++){
      double t0=now();
      for(int i=0;i<N;i++){v[i]=malloc(sizes[s]);*(volatile char*)v[i]=1;}
      double t1=now();
      for(int i=0;i<N;i++)free(v[i]);
      double t2=now();
      for(int i=0;i<N;i++){void*p=malloc(sizes[s]);*(volatile char*)p=1;free(p);}
      double t3=now();
      A[r]=(t1-t0)/N;B[r]=(t2-t1)/N;C[r]=(t3-t2)/N;
    }
    qsort(A,R,8,cmp);qsort(B,R,8,cmp);qsort(C,R,8,cmp);
    printf("%s size %zu A %.0f B %.0f C %.1f ns(cpu)\n",argc>1?argv[1]:"",sizes[s],A[R/2],B[R/2],C[R/2]);
  }
  return 0;
}
