/* dtype / op / collective names and properties, from the X-macro lists of the public headers. */
#include <glucx/glucx.h>

size_t glucx_dtype_size(glucx_dtype_t dtype)
{
    switch (dtype) {
#define GLUCX_DTYPE_SIZE_(name, lname, bytes, is_float)                                    \
    case GLUCX_DTYPE_##name:                                                               \
        return bytes;
        GLUCX_DTYPE_MAP(GLUCX_DTYPE_SIZE_)
#undef GLUCX_DTYPE_SIZE_
    default:
        return 0;
    }
}

const char *glucx_dtype_name(glucx_dtype_t dtype)
{
    switch (dtype) {
#define GLUCX_DTYPE_NAME_(name, lname, bytes, is_float)                                    \
    case GLUCX_DTYPE_##name:                                                               \
        return #lname;
        GLUCX_DTYPE_MAP(GLUCX_DTYPE_NAME_)
#undef GLUCX_DTYPE_NAME_
    default:
        return "invalid";
    }
}

static int dtype_is_float(glucx_dtype_t dtype)
{
    switch (dtype) {
#define GLUCX_DTYPE_FLOAT_(name, lname, bytes, is_float)                                   \
    case GLUCX_DTYPE_##name:                                                               \
        return is_float;
        GLUCX_DTYPE_MAP(GLUCX_DTYPE_FLOAT_)
#undef GLUCX_DTYPE_FLOAT_
    default:
        return 0;
    }
}

const char *glucx_op_name(glucx_op_t op)
{
    switch (op) {
#define GLUCX_OP_NAME_(name, lname)                                                        \
    case GLUCX_OP_##name:                                                                  \
        return #lname;
        GLUCX_OP_MAP(GLUCX_OP_NAME_)
#undef GLUCX_OP_NAME_
    default:
        return "invalid";
    }
}

int glucx_op_supported(glucx_op_t op, glucx_dtype_t dtype)
{
    if ((unsigned)dtype >= GLUCX_DTYPE_COUNT || (unsigned)op >= GLUCX_OP_COUNT)
        return 0;
    switch (op) {
    case GLUCX_OP_SUM:
    case GLUCX_OP_PROD:
    case GLUCX_OP_MIN:
    case GLUCX_OP_MAX:
        return 1;
    case GLUCX_OP_AVG:
        return dtype_is_float(dtype);
    case GLUCX_OP_BAND:
    case GLUCX_OP_BOR:
    case GLUCX_OP_BXOR:
        return !dtype_is_float(dtype);
    default:
        return 0;
    }
}

const char *glucx_coll_name(glucx_coll_t coll)
{
    switch (coll) {
#define GLUCX_COLL_NAME_(name, lname)                                                      \
    case GLUCX_COLL_##name:                                                                \
        return #lname;
        GLUCX_COLL_MAP(GLUCX_COLL_NAME_)
#undef GLUCX_COLL_NAME_
    default:
        return "invalid";
    }
}
