// The host convolution reference: each direction is written as a gather over the operand it
// writes, with its own index arithmetic (bwd_data inverts the forward map instead of scattering
// through it), so the adjoint identities the tests check compare three independent codes.
#include <string>

#include "kselect/verify.h"

namespace kselect::verify {
namespace {

// Sizes and strides of the three channels-last operands, in elements.
struct ConvIndex {
  int64_t n, c, k, g, cg, kg;
  int64_t di, hi, wi, z, y, x, d_o, ho, wo;
  int64_t sd, sh, sw, pd, ph, pw, dd, dh, dw;

  explicit ConvIndex(const ConvProblem& p)
      : n(p.n),
        c(p.c),
        k(p.k),
        g(p.g),
        cg(p.c / p.g),
        kg(p.k / p.g),
        di(p.di),
        hi(p.hi),
        wi(p.wi),
        z(p.z),
        y(p.y),
        x(p.x),
        d_o(p.Do()),
        ho(p.Ho()),
        wo(p.Wo()),
        sd(p.stride_d),
        sh(p.stride_h),
        sw(p.stride_w),
        pd(p.pad_d),
        ph(p.pad_h),
        pw(p.pad_w),
        dd(p.dilation_d),
        dh(p.dilation_h),
        dw(p.dilation_w) {}

  int64_t X(int64_t in, int64_t id, int64_t ih, int64_t iw, int64_t ic) const {
    return (((in * di + id) * hi + ih) * wi + iw) * c + ic;
  }
  int64_t W(int64_t ok, int64_t fz, int64_t fy, int64_t fx, int64_t cc) const {
    return (((ok * z + fz) * y + fy) * x + fx) * cg + cc;
  }
  int64_t Y(int64_t in, int64_t od, int64_t oh, int64_t ow, int64_t ok) const {
    return (((in * d_o + od) * ho + oh) * wo + ow) * k + ok;
  }
};

// The output position that reads input position `in` through filter tap `tap`, or -1 when none
// does (the tap lands between strides or outside the output).
int64_t OutputOf(int64_t in, int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                 int64_t out_size) {
  const int64_t t = in + pad - tap * dilation;
  if (t < 0 || t % stride != 0 || t / stride >= out_size) return -1;
  return t / stride;
}

// The input position output `out` reads through filter tap `tap`, or -1 in the padding.
int64_t InputOf(int64_t out, int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                int64_t in_size) {
  const int64_t i = out * stride - pad + tap * dilation;
  return i < 0 || i >= in_size ? -1 : i;
}

std::vector<double> Forward(const ConvIndex& s, std::span<const double> x,
                            std::span<const double> w) {
  std::vector<double> out(static_cast<size_t>(s.n * s.d_o * s.ho * s.wo * s.k));
  for (int64_t in = 0; in < s.n; ++in)
    for (int64_t od = 0; od < s.d_o; ++od)
      for (int64_t oh = 0; oh < s.ho; ++oh)
        for (int64_t ow = 0; ow < s.wo; ++ow)
          for (int64_t ok = 0; ok < s.k; ++ok) {
            const int64_t group = ok / s.kg;
            double acc = 0;
            for (int64_t fz = 0; fz < s.z; ++fz) {
              const int64_t id = InputOf(od, fz, s.sd, s.pd, s.dd, s.di);
              if (id < 0) continue;
              for (int64_t fy = 0; fy < s.y; ++fy) {
                const int64_t ih = InputOf(oh, fy, s.sh, s.ph, s.dh, s.hi);
                if (ih < 0) continue;
                for (int64_t fx = 0; fx < s.x; ++fx) {
                  const int64_t iw = InputOf(ow, fx, s.sw, s.pw, s.dw, s.wi);
                  if (iw < 0) continue;
                  for (int64_t cc = 0; cc < s.cg; ++cc) {
                    acc += x[s.X(in, id, ih, iw, group * s.cg + cc)] * w[s.W(ok, fz, fy, fx, cc)];
                  }
                }
              }
            }
            out[s.Y(in, od, oh, ow, ok)] = acc;
          }
  return out;
}

std::vector<double> BackwardData(const ConvIndex& s, std::span<const double> dy,
                                 std::span<const double> w) {
  std::vector<double> out(static_cast<size_t>(s.n * s.di * s.hi * s.wi * s.c));
  for (int64_t in = 0; in < s.n; ++in)
    for (int64_t id = 0; id < s.di; ++id)
      for (int64_t ih = 0; ih < s.hi; ++ih)
        for (int64_t iw = 0; iw < s.wi; ++iw)
          for (int64_t ic = 0; ic < s.c; ++ic) {
            const int64_t group = ic / s.cg;
            double acc = 0;
            for (int64_t fz = 0; fz < s.z; ++fz) {
              const int64_t od = OutputOf(id, fz, s.sd, s.pd, s.dd, s.d_o);
              if (od < 0) continue;
              for (int64_t fy = 0; fy < s.y; ++fy) {
                const int64_t oh = OutputOf(ih, fy, s.sh, s.ph, s.dh, s.ho);
                if (oh < 0) continue;
                for (int64_t fx = 0; fx < s.x; ++fx) {
                  const int64_t ow = OutputOf(iw, fx, s.sw, s.pw, s.dw, s.wo);
                  if (ow < 0) continue;
                  for (int64_t kk = 0; kk < s.kg; ++kk) {
                    const int64_t ok = group * s.kg + kk;
                    acc += dy[s.Y(in, od, oh, ow, ok)] * w[s.W(ok, fz, fy, fx, ic % s.cg)];
                  }
                }
              }
            }
            out[s.X(in, id, ih, iw, ic)] = acc;
          }
  return out;
}

std::vector<double> BackwardWeight(const ConvIndex& s, std::span<const double> x,
                                   std::span<const double> dy) {
  std::vector<double> out(static_cast<size_t>(s.k * s.z * s.y * s.x * s.cg));
  for (int64_t ok = 0; ok < s.k; ++ok)
    for (int64_t fz = 0; fz < s.z; ++fz)
      for (int64_t fy = 0; fy < s.y; ++fy)
        for (int64_t fx = 0; fx < s.x; ++fx)
          for (int64_t cc = 0; cc < s.cg; ++cc) {
            const int64_t ic = ok / s.kg * s.cg + cc;
            double acc = 0;
            for (int64_t in = 0; in < s.n; ++in)
              for (int64_t od = 0; od < s.d_o; ++od) {
                const int64_t id = InputOf(od, fz, s.sd, s.pd, s.dd, s.di);
                if (id < 0) continue;
                for (int64_t oh = 0; oh < s.ho; ++oh) {
                  const int64_t ih = InputOf(oh, fy, s.sh, s.ph, s.dh, s.hi);
                  if (ih < 0) continue;
                  for (int64_t ow = 0; ow < s.wo; ++ow) {
                    const int64_t iw = InputOf(ow, fx, s.sw, s.pw, s.dw, s.wi);
                    if (iw < 0) continue;
                    acc += x[s.X(in, id, ih, iw, ic)] * dy[s.Y(in, od, oh, ow, ok)];
                  }
                }
              }
            out[s.W(ok, fz, fy, fx, cc)] = acc;
          }
  return out;
}

Status CheckSize(std::string_view name, std::span<const double> operand, int64_t elements) {
  if (static_cast<int64_t>(operand.size()) == elements) return Status::Ok();
  return InvalidArgumentError("operand " + std::string(name) + " has " +
                              std::to_string(operand.size()) + " elements; the problem needs " +
                              std::to_string(elements));
}

}  // namespace

StatusOr<std::vector<double>> HostConvReference(const ConvProblem& problem,
                                                std::span<const double> x,
                                                std::span<const double> w,
                                                std::span<const double> y) {
  KSELECT_RETURN_IF_ERROR(problem.Validate());
  if (problem.layout != ConvLayout::kChannelsLast) {
    return UnimplementedError("the convolution reference reads channels-last operands only: " +
                              problem.ToString());
  }
  const ConvIndex s(problem);
  const int64_t x_elements = s.n * s.di * s.hi * s.wi * s.c;
  const int64_t w_elements = s.k * s.z * s.y * s.x * s.cg;
  const int64_t y_elements = s.n * s.d_o * s.ho * s.wo * s.k;
  switch (problem.direction) {
    case ConvDirection::kForward:
      KSELECT_RETURN_IF_ERROR(CheckSize("x", x, x_elements));
      KSELECT_RETURN_IF_ERROR(CheckSize("w", w, w_elements));
      return Forward(s, x, w);
    case ConvDirection::kBackwardData:
      KSELECT_RETURN_IF_ERROR(CheckSize("y", y, y_elements));
      KSELECT_RETURN_IF_ERROR(CheckSize("w", w, w_elements));
      return BackwardData(s, y, w);
    case ConvDirection::kBackwardWeight:
      KSELECT_RETURN_IF_ERROR(CheckSize("x", x, x_elements));
      KSELECT_RETURN_IF_ERROR(CheckSize("y", y, y_elements));
      return BackwardWeight(s, x, y);
  }
  return InvalidArgumentError("unknown convolution direction");
}

}  // namespace kselect::verify
