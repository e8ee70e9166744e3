/** @file glucx/export.h @brief Symbol visibility: libglucx is built with hidden visibility. */
#ifndef GLUCX_EXPORT_H
#define GLUCX_EXPORT_H
#if defined(GLUCX_BUILDING_LIBRARY)
#define GLUCX_API __attribute__((visibility("default")))
#else
#define GLUCX_API
#endif
#endif
