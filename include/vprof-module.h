/*
 * vprof-module.h: the public interface for vprof customization modules.
 *
 * Status: reserved. Modules (VPROF_MODULE=path.so) will observe the
 * instructions the in-process interpreter runs at value samples and keep
 * their own per-PC data, as the value-sampling paper's "customization"
 * interface did. Loading them is not implemented yet: libvprof.so accepts
 * VPROF_MODULE but ignores it. This header fixes the name and the version
 * number so a module's build can check for the interface it targets.
 */
#ifndef VPROF_MODULE_H
#define VPROF_MODULE_H

#define VPROF_MODULE_API_VERSION 0   /* 0: no module interface yet */

#endif
