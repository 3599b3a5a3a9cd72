#include <cctz/time_zone.h>
