#include <cpprest/json.h>
