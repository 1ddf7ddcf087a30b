/*
 * The worked example of docs/worked-example.md: a small ray caster whose
 * shading raises a cosine to each material's integer Phong exponent, as
 * POV-Ray did in the value-sampling paper's example (Burrows et al.,
 * ASPLOS 2000, section 3.1). power() is already special-cased for the
 * exponents its author expected (0, 1, 2) and calls libm's pow for the
 * rest; the scene's floor, most of the picture, has exponent 3.
 *
 * `vprof invariants` on a --values profile of this program names
 * power()'s exponent, 3, from shade(); built with -DSPECIALIZE, power()
 * has that case too (bench/specialize.sh measures the two builds).
 *
 *   shade [FRAMES [WIDTH HEIGHT]]    prints a checksum of the frames'
 *                                    pixels (the same for both builds)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct vec { double x, y, z; };
struct sphere { struct vec c; double r; double albedo; int phong; };

static const struct sphere kScene[] = {
	{ { 0, -1000.5, 4 }, 1000, 0.6, 3 },     /* the floor */
	{ { -0.9, 0, 4 }, 0.3, 0.8, 2 },
	{ { 0.3, 0.1, 3.5 }, 0.25, 0.7, 8 },
	{ { 1.1, -0.1, 4.5 }, 0.3, 0.9, 1 },
	{ { 0.0, 0.8, 6 }, 0.3, 0.5, 0 },
};
#define NSPHERES (int)(sizeof(kScene) / sizeof(kScene[0]))

static const struct vec kLights[] = { { -0.577, 0.577, -0.577 }, { 0.707, 0.707, 0 }, { 0, 0.8, -0.6 } };
#define NLIGHTS (int)(sizeof(kLights) / sizeof(kLights[0]))

static double dot(struct vec a, struct vec b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static struct vec sub(struct vec a, struct vec b) { return (struct vec){ a.x - b.x, a.y - b.y, a.z - b.z }; }
static struct vec scale(struct vec a, double k) { return (struct vec){ a.x * k, a.y * k, a.z * k }; }

/* x to the integer power n (n >= 0). */
__attribute__((noinline)) double power(double x, int n)
{
	switch (n) {
	case 0: return 1.0;
	case 1: return x;
	case 2: return x * x;
#ifdef SPECIALIZE
	case 3: return x * x * x;
#endif
	default: return pow(x, n);
	}
}

/* The light a surface point sends back along the ray d: diffuse from each
 * light, and a Phong highlight of the light mirrored about the normal. */
static double shade(const struct sphere *s, struct vec p, struct vec n, struct vec d)
{
	double c = 0.1;
	(void)p;
	for (int l = 0; l < NLIGHTS; l++) {
		double diff = dot(n, kLights[l]);
		if (diff <= 0)
			continue;
		struct vec r = sub(scale(n, 2 * diff), kLights[l]);     /* the light, mirrored */
		double spec = -dot(r, d);
		c += s->albedo * diff;
		if (spec > 0)
			c += 0.5 * power(spec, s->phong);
	}
	return c;
}

/* The nearest sphere the ray from the eye along d meets, and where. */
static const struct sphere *hit(struct vec d, double *t)
{
	const struct sphere *best = NULL;
	*t = INFINITY;
	for (int i = 0; i < NSPHERES; i++) {
		struct vec oc = scale(kScene[i].c, -1);
		double b = dot(oc, d), c = dot(oc, oc) - kScene[i].r * kScene[i].r, h = b * b - c;
		if (h < 0)
			continue;
		double u = -b - sqrt(h);
		if (u > 1e-6 && u < *t) {
			*t = u;
			best = &kScene[i];
		}
	}
	return best;
}

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 20;
	int w = argc > 3 ? atoi(argv[2]) : 640, h = argc > 3 ? atoi(argv[3]) : 480;
	unsigned long sum = 0;
	for (int f = 0; f < frames; f++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				/* the camera turns a little each frame */
				struct vec d = { (x - w / 2) / (double)h + 0.002 * f, (h / 2 - y) / (double)h - 0.35, 1 };
				double t, c = 0;
				d = scale(d, 1 / sqrt(dot(d, d)));
				const struct sphere *s = hit(d, &t);
				if (s) {
					struct vec p = scale(d, t);
					c = shade(s, p, scale(sub(p, s->c), 1 / s->r), d);
				}
				int px = (int)(255 * (c > 1 ? 1 : c));
				sum += (unsigned long)px;
			}
	printf("%d frames of %dx%d: pixel sum %lu\n", frames, w, h, sum);
	return 0;
}
