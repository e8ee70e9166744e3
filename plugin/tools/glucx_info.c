/* glucx-info: version and build options (placeholder until the glucx-info work lands). */
#include <stdio.h>

#include <glucx/glucx.h>

int main(void)
{
    printf("glucx %s\n", glucx_version());
    return 0;
}
