// Vector types, unaligned loads/stores and vector cos/sin for the instruction set the including
// translation unit is compiled for. Shared by every per-ISA kernel file (cos kernels, structured
// maps); RFFKERN_ISA_NS names the per-ISA namespace.
#pragma once
#include <cmath>
#include <cstring>

#ifndef RFFKERN_ISA_NS
#error "define RFFKERN_ISA_NS before including simd_vector.hpp"
#endif

namespace rffkern {
namespace RFFKERN_ISA_NS {
namespace simd {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX2__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

typedef double vdouble __attribute__((vector_size(kVecBytes)));
typedef float vfloat __attribute__((vector_size(kVecBytes)));

template <class V, class T>
inline V loadu(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
}
template <class V, class T>
inline void storeu(T* p, V v) {
    std::memcpy(p, &v, sizeof(V));
}

#if defined(RFFKERN_HAVE_LIBMVEC)
// glibc's libmvec, x86_64 vector function ABI: b = SSE, d = AVX2, e = AVX-512.
extern "C" {
#if defined(__AVX512F__)
vdouble _ZGVeN8v_cos(vdouble);
vdouble _ZGVeN8v_sin(vdouble);
vfloat _ZGVeN16v_cosf(vfloat);
vfloat _ZGVeN16v_sinf(vfloat);
#elif defined(__AVX2__)
vdouble _ZGVdN4v_cos(vdouble);
vdouble _ZGVdN4v_sin(vdouble);
vfloat _ZGVdN8v_cosf(vfloat);
vfloat _ZGVdN8v_sinf(vfloat);
#else
vdouble _ZGVbN2v_cos(vdouble);
vdouble _ZGVbN2v_sin(vdouble);
vfloat _ZGVbN4v_cosf(vfloat);
vfloat _ZGVbN4v_sinf(vfloat);
#endif
}
#if defined(__AVX512F__)
inline vdouble vcos(vdouble x) { return _ZGVeN8v_cos(x); }
inline vdouble vsin(vdouble x) { return _ZGVeN8v_sin(x); }
inline vfloat vcos(vfloat x) { return _ZGVeN16v_cosf(x); }
inline vfloat vsin(vfloat x) { return _ZGVeN16v_sinf(x); }
#elif defined(__AVX2__)
inline vdouble vcos(vdouble x) { return _ZGVdN4v_cos(x); }
inline vdouble vsin(vdouble x) { return _ZGVdN4v_sin(x); }
inline vfloat vcos(vfloat x) { return _ZGVdN8v_cosf(x); }
inline vfloat vsin(vfloat x) { return _ZGVdN8v_sinf(x); }
#else
inline vdouble vcos(vdouble x) { return _ZGVbN2v_cos(x); }
inline vdouble vsin(vdouble x) { return _ZGVbN2v_sin(x); }
inline vfloat vcos(vfloat x) { return _ZGVbN4v_cosf(x); }
inline vfloat vsin(vfloat x) { return _ZGVbN4v_sinf(x); }
#endif
#else
// Without libmvec (non-glibc): scalar std::cos / std::sin per lane.
template <class V>
inline V vcos(V x) {
    for (int l = 0; l < int(sizeof(V) / sizeof(x[0])); ++l) x[l] = std::cos(x[l]);
    return x;
}
template <class V>
inline V vsin(V x) {
    for (int l = 0; l < int(sizeof(V) / sizeof(x[0])); ++l) x[l] = std::sin(x[l]);
    return x;
}
#endif

}  // namespace simd
}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
