// Lint rules for the TypeScript sources: typescript-eslint's recommended set with a few project choices.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
    { ignores: ["node_modules/**", "out/**", "dist/**", ".testhosts/**", "policies/dist/**"] },
    js.configs.recommended,
    ...tseslint.configs.recommended,
    {
        rules: {
            "@typescript-eslint/no-explicit-any": "off",
            "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
            "no-constant-condition": ["error", { checkLoops: false }],
            // a `let` set once after a cleanup hook that reads it cannot become a const
            "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
        },
    },
    {
        // plain CommonJS: the installed command's launcher, and the JavaScript example program
        files: ["bin/*.cjs", "examples/javascript/*.js"],
        languageOptions: { sourceType: "commonjs", globals: { require: "readonly", exports: "writable" } },
        rules: { "@typescript-eslint/no-require-imports": "off" },
    },
);
