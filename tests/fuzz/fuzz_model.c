/*
 * fuzz_model.c -- the model file parser (mllib/modelfile.c): versions 1
 * and 2 of the text form of em_ml_model_save.
 *
 * Input: the whole file.
 * Properties:
 *   - ml_model_parse never crashes and either returns a model or fails
 *     with EM_ECORRUPT (or EM_ENOMEM) and a message "NAME:LINE: reason";
 *   - a model it returns is well formed: classes 0 (binary, no
 *     intercepts) or 2..EM_ML_MAX_CLASSES (multinomial, K intercepts), cols
 *     >= 0, every number finite;
 *   - saved again with em_ml_model_save and loaded back, it is the same
 *     model bit for bit (the format round-trips whatever parsed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "ember_ml.h"
#include "fuzz.h"
#include "modelfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    em_ml_model *m = ml_model_parse((const char *)data, size, "in.model");
    if (!m) {
        const char *msg = em_errmsg();
        FZ_CHECK(!strncmp(msg, "in.model:", 9), "message without the name: %s", msg);
        return 0;
    }
    int multi = m->classes != 0;
    FZ_CHECK(m->cols >= 0, "cols %lld", (long long)m->cols);
    FZ_CHECK(!multi || (m->classes >= 2 && m->classes <= EM_ML_MAX_CLASSES && m->intercepts), "classes %d",
             m->classes);
    FZ_CHECK(multi || !m->intercepts, "a binary model with intercepts");
    int64_t nw = (multi ? m->classes : 1) * m->cols;
    for (int64_t j = 0; j < nw; j++) FZ_CHECK(isfinite(m->w[j]), "weight %lld not finite", (long long)j);
    char path[4096];
    snprintf(path, sizeof path, "%s/round.model", fz_tmpdir());
    FZ_CHECK(em_ml_model_save(m, path) == 0, "save: %s", em_errmsg());
    em_ml_model *b = em_ml_model_load(path);
    FZ_CHECK(b, "load of a saved model: %s", em_errmsg());
    FZ_CHECK(b->cols == m->cols && b->classes == m->classes, "shape changed");
    FZ_CHECK(!memcmp(b->w, m->w, sizeof(double) * (size_t)nw), "weights changed");
    if (multi)
        FZ_CHECK(!memcmp(b->intercepts, m->intercepts, sizeof(double) * (size_t)m->classes), "intercepts changed");
    else
        FZ_CHECK(!memcmp(&b->b, &m->b, sizeof m->b), "intercept changed");
    em_ml_model_free(b);
    em_ml_model_free(m);
    return 0;
}
